package outfile

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// openNew creates path for writing, failing with fs.ErrExist when anything
// is there: CREATE_NEW fails on an existing name, and with
// FILE_FLAG_OPEN_REPARSE_POINT a symbolic link, junction or other reparse
// point at the name is the name itself, never followed. Windows has no
// mode bits: the file gets the access control list its folder gives new
// files.
func openNew(path string) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(name,
		windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE,
		nil,
		windows.CREATE_NEW,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT,
		0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

// isLink says whether st, from Lstat, is a symbolic link or any other
// reparse point (a junction, a mount point, a cloud placeholder): none of
// them is followed into creating or replacing a file.
func isLink(st fs.FileInfo) bool {
	if st.Mode()&fs.ModeSymlink != 0 {
		return true
	}
	if a, ok := st.Sys().(*syscall.Win32FileAttributeData); ok {
		return a.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0
	}
	return false
}

// renameNoReplace renames from to to, failing with fs.ErrExist when to
// exists: MoveFileEx without MOVEFILE_REPLACE_EXISTING fails with
// ERROR_ALREADY_EXISTS; MOVEFILE_WRITE_THROUGH returns once the rename is
// on disk.
func renameNoReplace(from, to string) error {
	return moveFile(from, to, windows.MOVEFILE_WRITE_THROUGH)
}

// renameReplace renames from to to, replacing to (MoveFileEx with
// MOVEFILE_REPLACE_EXISTING, as os.Rename does), durably.
func renameReplace(from, to string) error {
	return moveFile(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH)
}

func moveFile(from, to string, flags uint32) error {
	f, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	t, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	if err := windows.MoveFileEx(f, t, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// syncDir does nothing: a folder cannot be flushed on Windows, and
// MOVEFILE_WRITE_THROUGH already made the rename durable.
func syncDir(string) {}
