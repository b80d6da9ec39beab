package outfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/internal/usage"
)

// entries counts what dir holds, temporary files included.
func entries(dir string) int {
	es, _ := os.ReadDir(dir)
	return len(es)
}

// A file that appears while the output is written is not replaced: Commit
// fails with ErrExists and removes the temporary file.
func TestCommitDoesNotReplaceNewcomer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "ours")
	if err := os.WriteFile(path, []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); !errors.Is(err, ErrExists) {
		t.Errorf("Commit: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs\n" {
		t.Errorf("the newcomer holds %q", b)
	}
	if n := entries(dir); n != 1 {
		t.Errorf("%d files left, want 1", n)
	}
}

// Discard of a progressive output removes the file it created, but not a
// file that replaced it meanwhile.
func TestDiscardProgressive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cap")
	f, err := Create(path, Options{Progressive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a progressive output is not at its final name: %v", err)
	}
	f.Discard()
	if _, err := os.Stat(path); err == nil {
		t.Error("Discard left the file it created")
	}
	f, err = Create(path, Options{Progressive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Discard()
	if b, _ := os.ReadFile(path); string(b) != "theirs\n" {
		t.Errorf("Discard removed or changed a file it did not create: %q", b)
	}
}

// CreateNumbered takes the first free name at Commit, never replacing one.
func TestCreateNumbered(t *testing.T) {
	dir := t.TempDir()
	name := func(n int) string { return fmt.Sprintf("part-%d", n) }
	a, err := CreateNumbered(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CreateNumbered(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-0"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil || filepath.Base(b.Name()) != "part-1" {
		t.Fatalf("b: %v, %s", err, b.Name())
	}
	if err := a.Commit(); err != nil || filepath.Base(a.Name()) != "part-2" {
		t.Fatalf("a: %v, %s", err, a.Name())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "part-0")); string(b) != "old" {
		t.Error("part-0 replaced")
	}
	if n := entries(dir); n != 3 {
		t.Errorf("%d files left, want 3", n)
	}
}

// Every refusal is a usage error, and an output the rules let through fails,
// if it fails, with an error that is not one.
func TestRefusalIsUsage(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(exists, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		o    Options
		want error
	}{
		{exists, Options{}, ErrExists},
		{link, Options{Force: true}, ErrSymlink},
		{dir, Options{Force: true}, ErrIsDir},
		{exists, Options{Force: true, Inputs: []string{exists}}, ErrSameAsInput},
	} {
		_, err := Check(c.path, c.o)
		if !errors.Is(err, c.want) || !usage.Is(err) {
			t.Errorf("Check(%s): %v: want %v, a usage error", c.path, err, c.want)
		}
	}
	_, err := Create(filepath.Join(dir, "no", "such", "dir", "out"), Options{})
	if err == nil || usage.Is(err) {
		t.Errorf("Create in a missing folder: %v, want a failure that is not a usage error", err)
	}
}

// An output that cannot be created is named in the error as the user gave
// it, not as the temporary file it would have been written to first.
func TestCreateErrorNamesOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "no", "such", "out.csv")
	_, err := Create(path, Options{})
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != path || pe.Op != "create" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Create(%s): %v, want a create error naming it", path, err)
	}
	_, err = CreateNumbered(filepath.Join(dir, "none"), func(n int) string { return fmt.Sprintf("part-%d", n) })
	if !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "none", "part-0") {
		t.Errorf("CreateNumbered: %v, want a create error naming part-0", err)
	}
}
