package elfsym

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/internal/testutil"
)

// TestOpenRegular: a regular file opens under every Links; a FIFO,
// directory or device is refused without being opened, followed or
// not; NoLinks refuses a link anywhere on the path, NoMagicLinks only
// /proc's magic links.
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	fifoOpened := testutil.WatchFIFO(t, fifo)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	toFile, toFifo, toZero, toSub := link("to-file", "file"), link("to-fifo", fifo), link("to-zero", "/dev/zero"), link("to-sub", "sub")
	if err := os.WriteFile(filepath.Join(sub, "inner"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	magic := "/proc/self/fd/" + strconv.Itoa(int(self.Fd()))

	for _, tc := range []struct {
		path  string
		links Links
		want  error // nil: opens
	}{
		{file, FollowLinks, nil},
		{file, NoMagicLinks, nil},
		{file, NoLinks, nil},
		{toFile, FollowLinks, nil},
		{toFile, NoMagicLinks, nil},
		{toFile, NoLinks, ErrLinkRefused},
		{filepath.Join(toSub, "inner"), NoMagicLinks, nil},
		{filepath.Join(toSub, "inner"), NoLinks, ErrLinkRefused},
		{magic, FollowLinks, nil},
		{magic, NoMagicLinks, syscall.ELOOP},
		{magic, NoLinks, ErrLinkRefused},
		{fifo, FollowLinks, ErrNotRegular},
		{fifo, NoLinks, ErrNotRegular},
		{toFifo, FollowLinks, ErrNotRegular},
		{toFifo, NoLinks, ErrLinkRefused},
		{toZero, FollowLinks, ErrNotRegular},
		{toZero, NoLinks, ErrLinkRefused},
		{"/dev/zero", FollowLinks, ErrNotRegular},
		{sub, FollowLinks, ErrNotRegular},
		{filepath.Join(dir, "none"), FollowLinks, os.ErrNotExist},
	} {
		start := time.Now()
		f, err := OpenRegular(tc.path, tc.links)
		if d := time.Since(start); d > time.Second {
			t.Errorf("OpenRegular(%s, %d) took %v", tc.path, tc.links, d)
		}
		if tc.want == nil {
			if err != nil {
				t.Errorf("OpenRegular(%s, %d): %v", tc.path, tc.links, err)
				continue
			}
			b := make([]byte, 8)
			n, _ := f.Read(b)
			if got := string(b[:n]); got != "data" && got != "x" {
				t.Errorf("OpenRegular(%s, %d) read %q", tc.path, tc.links, got)
			}
			if fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
				t.Errorf("OpenRegular(%s, %d): O_NONBLOCK left set", tc.path, tc.links)
			}
			f.Close()
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("OpenRegular(%s, %d) = %v, want %v", tc.path, tc.links, err, tc.want)
		}
		if f != nil {
			f.Close()
		}
		if fifoOpened() {
			t.Fatalf("OpenRegular(%s, %d) opened the FIFO", tc.path, tc.links)
		}
	}
	// The watch sees an open of the FIFO: what a plain O_NONBLOCK open
	// followed by a check of its fstat would have done.
	fd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if !fifoOpened() {
		t.Error("the watch did not see the FIFO opened")
	}
}

// TestOpenInRoot: a path inside a root directory, with no link followed;
// an absolute link inside the root is refused rather than resolved
// against this process's root.
func TestOpenInRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr", "lib", "libx.so"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "usr", "lib", "liby.so")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	f, err := OpenInRoot(root, "/usr/lib/libx.so")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{"/usr/lib/liby.so", "/lib/libx.so"} {
		if f, err := OpenInRoot(root, p); !errors.Is(err, ErrLinkRefused) {
			t.Errorf("OpenInRoot(%s) = %v, want %v", p, err, ErrLinkRefused)
			if f != nil {
				f.Close()
			}
		}
	}
	if _, err := OpenInRoot(root, "/../../../../etc/passwd"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenInRoot(/../../etc/passwd): %v, want it not found inside the root", err)
	}
}

// TestDebugLinkHostile: a stripped binary whose .gnu_debuglink names a
// FIFO, a link to a device, a link to its real debug file or a directory
// next to it: no debug file, found at once, with the candidate refused
// and saying why, and the FIFO never opened. The same link inside a
// debug directory is followed.
func TestDebugLinkHostile(t *testing.T) {
	bin := buildTarget(t, "target", "-no-pie")
	fifoOpened := func() bool { return false }
	for _, tc := range []struct {
		name string
		make func(t *testing.T, debug, saved string)
		want string
	}{
		{"fifo", func(t *testing.T, debug, _ string) {
			fifoOpened = testutil.WatchFIFO(t, debug)
		}, "a FIFO, not a regular file"},
		{"device link", func(t *testing.T, debug, _ string) {
			if err := os.Symlink("/dev/zero", debug); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link on the way"},
		{"file link", func(t *testing.T, debug, saved string) {
			if err := os.Symlink(saved, debug); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link on the way"},
		{"directory", func(t *testing.T, debug, _ string) {
			if err := os.Mkdir(debug, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "a directory, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifoOpened = func() bool { return false }
			s := stripBinary(t, bin)
			saved := filepath.Join(t.TempDir(), "saved.debug")
			if err := os.Rename(s.debug, saved); err != nil {
				t.Fatal(err)
			}
			tc.make(t, s.debug, saved)
			start := time.Now()
			got, err := FindDebugFile(s.bin, nil)
			if d := time.Since(start); d > time.Second {
				t.Errorf("FindDebugFile took %v", d)
			}
			var derr *DebugFileError
			if !errors.As(err, &derr) || derr.Mismatch() || got != "" {
				t.Fatalf("FindDebugFile = %q, %v; want no debug file", got, err)
			}
			if len(derr.Refused) != 1 || !strings.HasPrefix(derr.Refused[0], s.debug+": ") || !strings.Contains(derr.Refused[0], tc.want) {
				t.Errorf("refused %q, want %s: %s", derr.Refused, s.debug, tc.want)
			}
			if !strings.Contains(err.Error(), "refused "+s.debug) {
				t.Errorf("error %q does not say what was refused", err)
			}
			if _, err := Locate(s.bin, "tape_static", nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Locate: %v, want it to say %q", err, tc.want)
			}
			if fifoOpened() {
				t.Error("the FIFO was opened")
			}
		})
	}
	t.Run("link in a debug dir", func(t *testing.T) {
		// DIR/<the binary's directory>/NAME may be a link: the debug
		// directories are the administrator's.
		s := stripBinary(t, bin)
		g := t.TempDir()
		in := filepath.Join(g, filepath.Dir(s.bin), filepath.Base(s.debug))
		if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
			t.Fatal(err)
		}
		saved := filepath.Join(t.TempDir(), "saved.debug")
		if err := os.Rename(s.debug, saved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(saved, in); err != nil {
			t.Fatal(err)
		}
		f, got, err := OpenDebugFile(s.bin, []string{g})
		if err != nil || got != in {
			t.Fatalf("OpenDebugFile = %q, %v; want %s", got, err, in)
		}
		defer f.Close()
		fi, _ := f.Stat()
		want, _ := os.Stat(saved)
		if !os.SameFile(fi, want) {
			t.Errorf("the file returned is not %s", saved)
		}
	})
}
