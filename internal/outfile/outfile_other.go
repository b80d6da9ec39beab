//go:build unix && !linux && !darwin

package outfile

// renameNoReplace renames from to to, failing with fs.ErrExist when to
// exists: link(2) and unlink(2), since these systems have no rename that
// refuses to replace in golang.org/x/sys/unix.
func renameNoReplace(from, to string) error { return linkNoReplace(from, to) }
