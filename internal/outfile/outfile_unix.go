//go:build unix

package outfile

import (
	"io/fs"
	"os"
	"syscall"
)

// openNew creates path for writing, mode 0600, failing with fs.ErrExist
// when anything is there, a symbolic link included (O_EXCL|O_NOFOLLOW).
func openNew(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}

// isLink says whether st, from Lstat, is a symbolic link.
func isLink(st fs.FileInfo) bool { return st.Mode()&fs.ModeSymlink != 0 }

// renameReplace renames from to to, replacing to (rename(2)).
func renameReplace(from, to string) error { return os.Rename(from, to) }

// linkNoReplace renames from to to with link(2) and unlink(2): link fails
// with EEXIST when to exists, whatever it is. It serves file systems
// without a rename that refuses to replace.
func linkNoReplace(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}

// syncDir makes a rename durable; a failure is harmless (the data is synced).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
