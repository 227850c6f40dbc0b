//go:build !linux

package sqlite

// fsRefusesWrites is not implemented off Linux: a read-only or full file system there shows
// in failed writes only.
func fsRefusesWrites(string) error { return nil }
