//go:build unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// linkNoReplace, the fallback where the file system has no rename that
// refuses to replace, refuses an existing target and renames to a free
// name.
func TestLinkNoReplace(t *testing.T) {
	dir := t.TempDir()
	from, to, free := filepath.Join(dir, "from"), filepath.Join(dir, "to"), filepath.Join(dir, "free")
	os.WriteFile(from, []byte("new"), 0o600)
	os.WriteFile(to, []byte("old"), 0o600)
	if err := linkNoReplace(from, to); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("linkNoReplace over a file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(to); string(b) != "old" {
		t.Errorf("the target holds %q", b)
	}
	if err := linkNoReplace(from, free); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(from); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the source is still there: %v", err)
	}
	if b, _ := os.ReadFile(free); string(b) != "new" {
		t.Errorf("the renamed file holds %q", b)
	}
}
