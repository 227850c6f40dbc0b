//go:build !linux && !darwin

package secretbox

// renameNoReplace: no rename that refuses to replace is available here.
var renameNoReplace = func(oldpath, newpath string) error { return errNoReplaceUnsupported }
