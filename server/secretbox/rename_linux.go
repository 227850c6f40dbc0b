package secretbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames oldpath to newpath unless newpath exists (then an error wrapping
// os.ErrExist); errNoReplaceUnsupported where the kernel or file system cannot do it so.
var renameNoReplace = func(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP):
		return errNoReplaceUnsupported
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}
