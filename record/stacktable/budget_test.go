package stacktable

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/internal/testutil"
)

// hungMaps makes, in the fake /proc dir, process pid whose maps file is a
// FIFO: reading it waits for a writer forever, as a read of a hung file
// system would. The test's end lets the waiting reader go.
func hungMaps(t *testing.T, dir string, pid int) {
	t.Helper()
	pd := filepath.Join(dir, strconv.Itoa(pid))
	if err := os.MkdirAll(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	maps := filepath.Join(pd, "maps")
	if err := unix.Mkfifo(maps, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A writer opened and closed: the reader sees an empty file.
		if fd, err := unix.Open(maps, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
	})
}

// TestReadBudget: a process whose maps never come costs readBudget and
// gets a note saying why; after maxOverruns of them, nothing more is read,
// at once; the reads left behind end when their files answer.
func TestReadBudget(t *testing.T) {
	defer func(d time.Duration) { readBudget = d }(readBudget)
	readBudget = 100 * time.Millisecond
	dir := t.TempDir()
	for pid := 1; pid <= maxOverruns+1; pid++ {
		hungMaps(t, dir, pid)
	}
	c := New(Options{Proc: dir})
	for pid := 1; pid <= maxOverruns+1; pid++ {
		start := time.Now()
		c.Add(uint32(pid), 1, false, []uint64{0x401000})
		d := time.Since(start)
		switch {
		case pid <= maxOverruns && (d < readBudget || d > readBudget+time.Second):
			t.Errorf("pid %d: Add took %v, want about %v", pid, d, readBudget)
		case pid > maxOverruns && d > 50*time.Millisecond:
			t.Errorf("pid %d, after %d overruns: Add took %v", pid, maxOverruns, d)
		}
	}
	tb := c.Take()
	if tb == nil || len(tb.Processes) != maxOverruns+1 {
		t.Fatalf("table %+v, want a note per process", tb)
	}
	for i, n := range tb.Processes {
		want := "its mappings were not read: reading took more than 100ms"
		if i >= maxOverruns {
			want = "its mappings were not read: 3 reads took more than 100ms each, so no more are made"
		}
		if !strings.HasPrefix(n.Reason, want) {
			t.Errorf("note %+v, want %q", n, want)
		}
	}
	if n := c.reads.stuck.Load(); n != maxOverruns {
		t.Errorf("%d reads left running, want %d", n, maxOverruns)
	}
	if n := c.Stats().Skipped; n != maxOverruns+1 {
		t.Errorf("Stats().Skipped = %d, want %d", n, maxOverruns+1)
	}
}

// TestHurry: a read waited for when Hurry is called is waited for until
// its deadline only, and none starts after it; before it, reads go on.
func TestHurry(t *testing.T) {
	defer func(d time.Duration) { readBudget = d }(readBudget)
	readBudget = time.Minute
	bin := buildProg(t, "prog")
	dir, _, top, _ := fakeProc(t, bin, 4242, "top")
	hungMaps(t, dir, 1)
	hungMaps(t, dir, 2)
	c := New(Options{Proc: dir})
	go func() {
		time.Sleep(100 * time.Millisecond)
		c.Hurry(100 * time.Millisecond)
	}()
	start := time.Now()
	c.Add(1, 1, false, []uint64{0x401000})
	if d := time.Since(start); d < 150*time.Millisecond || d > time.Second {
		t.Errorf("Add took %v, want about 200ms: Hurry at 100ms, for 100ms", d)
	}
	tb := c.Take()
	if tb == nil || len(tb.Processes) != 1 || tb.Processes[0].Reason != "its mappings were not read: the recording was ending" {
		t.Errorf("table %+v, want a note that the recording was ending", tb)
	}
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	c.Add(2, 1, false, []uint64{0x401000})
	c.Add(4242, 1, false, []uint64{top})
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("past the deadline, Add took %v", d)
	}
	if tb := c.Take(); tb == nil || len(tb.Processes) != 2 || len(tb.Symbols) != 0 {
		t.Errorf("past the deadline: %+v, want two notes and no symbols", tb)
	}

	// Before the deadline, reads go on as ever.
	c = New(Options{Proc: dir})
	c.Hurry(time.Minute)
	c.Add(4242, 1, false, []uint64{top})
	tb = c.Take()
	table{tb}.resolve(t, 4242, top, "top", "")
}

// TestHostileDebugLink: a stripped program whose .gnu_debuglink names,
// next to it, a FIFO, a link to a device, or a directory: its stack is
// added at once, its object says what was refused, and the FIFO is never
// opened (a writer waiting for a reader stays blocked).
func TestHostileDebugLink(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	orig := buildProg(t, "prog")
	for _, tc := range []struct {
		name, want string
		make       func(path string) error
	}{
		{"fifo", "a FIFO, not a regular file", func(path string) error { return unix.Mkfifo(path, 0o644) }},
		{"device link", "a symbolic link on the way", func(path string) error { return os.Symlink("/dev/zero", path) }},
		{"directory", "a directory, not a regular file", func(path string) error { return os.Mkdir(path, 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, debug := filepath.Join(dir, "prog"), filepath.Join(dir, "prog.debug")
			for _, args := range [][]string{
				{"objcopy", "--only-keep-debug", orig, debug},
				{"strip", "--strip-all", "-o", bin, orig},
				{"objcopy", "--add-gnu-debuglink=" + debug, bin},
			} {
				if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", args, err, out)
				}
			}
			if err := os.Remove(debug); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(debug); err != nil {
				t.Fatal(err)
			}
			opened := make(chan struct{})
			if tc.name == "fifo" {
				go func() {
					if fd, err := unix.Open(debug, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
						unix.Close(fd)
					}
					close(opened)
				}()
				t.Cleanup(func() {
					if fd, err := unix.Open(debug, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
						<-opened
						unix.Close(fd)
					}
				})
			}
			p, a := start(t, bin)
			c := New(Options{DebugDirs: []string{t.TempDir()}})
			begin := time.Now()
			c.Add(p.pid, 1, false, []uint64{a.leaf, a.ret, a.mid, a.top})
			if d := time.Since(begin); d > 500*time.Millisecond {
				t.Errorf("Add took %v", d)
			}
			tb := table{c.Take()}
			m := tb.mapping(p.pid, a.top)
			if m == nil {
				t.Fatalf("no mapping for top: %+v", tb.Maps)
			}
			o := tb.object(m.Object)
			if o == nil || !strings.Contains(o.NoSymbols, "stripped") || !strings.Contains(o.NoSymbols, "refused "+debug+": "+tc.want) {
				t.Errorf("object %+v, want NoSymbols saying %s was refused: %s", o, debug, tc.want)
			} else {
				t.Logf("NoSymbols: %s", o.NoSymbols)
			}
			select {
			case <-opened:
				t.Error("the FIFO was opened")
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}
