package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The tests of each system's primitives (outfile_linux.go,
// outfile_darwin.go, outfile_windows.go, outfile_unix.go), which the rules
// of the package rest on. They run on every system.

// symlink makes a symbolic link, or skips the test where the user may not
// (Windows without Developer Mode or the privilege).
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("skipping: cannot make a symbolic link: %v", err)
	}
}

// renameNoReplace refuses an existing target with fs.ErrExist and leaves
// both files as they were; to a free name it renames.
func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	from, to, free := filepath.Join(dir, "from"), filepath.Join(dir, "to"), filepath.Join(dir, "free")
	os.WriteFile(from, []byte("new"), 0o600)
	os.WriteFile(to, []byte("old"), 0o600)
	if err := renameNoReplace(from, to); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("renameNoReplace over a file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(to); string(b) != "old" {
		t.Errorf("the target holds %q", b)
	}
	if b, _ := os.ReadFile(from); string(b) != "new" {
		t.Errorf("the source holds %q", b)
	}
	// A symbolic link, even one to nowhere, is a file there.
	dangling := filepath.Join(dir, "dangling")
	symlink(t, filepath.Join(dir, "nowhere"), dangling)
	if err := renameNoReplace(from, dangling); !errors.Is(err, fs.ErrExist) {
		t.Errorf("renameNoReplace over a dangling link: %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("renameNoReplace created the link's target")
	}
	if err := renameNoReplace(from, free); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(free); string(b) != "new" {
		t.Errorf("the renamed file holds %q", b)
	}
	if _, err := os.Lstat(from); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the source is still there: %v", err)
	}
}

// renameReplace replaces the target.
func TestRenameReplace(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from"), filepath.Join(dir, "to")
	os.WriteFile(from, []byte("new"), 0o600)
	os.WriteFile(to, []byte("old"), 0o600)
	if err := renameReplace(from, to); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(to); string(b) != "new" {
		t.Errorf("the target holds %q", b)
	}
}

// openNew creates a new file (owner-only where there are mode bits) and
// refuses a file or a symbolic link at the name, without following the
// link.
func TestOpenNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new")
	f, err := openNew(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("ours"); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := openNew(path); !errors.Is(err, fs.ErrExist) {
		t.Errorf("openNew over a file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "ours" {
		t.Errorf("the file holds %q", b)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	symlink(t, target, link)
	if f, err := openNew(link); !errors.Is(err, fs.ErrExist) {
		if f != nil {
			f.Close()
		}
		t.Errorf("openNew over a dangling link: %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("openNew followed the link and created its target")
	}
}

// isLink tells a symbolic link from what it points to.
func TestIsLink(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(dir, "link")
	symlink(t, file, link)
	for path, want := range map[string]bool{file: false, dir: false, link: true} {
		st, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := isLink(st); got != want {
			t.Errorf("isLink(%s) = %v, want %v", path, got, want)
		}
	}
}

// A refusal of a link whose target cannot be read (a reparse point that
// is no link, on Windows) still says what it refuses.
func TestSymlinkErrorWithoutTarget(t *testing.T) {
	e := &Error{Path: "out", Err: ErrSymlink}
	if got, want := e.Error(), "output out is a symbolic link or reparse point: not followed, to create or replace no other file; give another output"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
