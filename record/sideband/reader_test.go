package sideband

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestReadLive opens the side-band, runs /bin/true, and finds its fork,
// exec, executable mappings and exit among the records, in time order,
// stamped with the boot clock.
func TestReadLive(t *testing.T) {
	testutil.RequireRoot(t, "perf side-band records of every process")
	for _, buildID := range []bool{false, true} {
		r, err := Open(Options{CPUs: runtime.NumCPU(), BuildID: buildID})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		before := boottime.Now()
		cmd := exec.Command("/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		after := boottime.Now()
		pid := uint32(cmd.Process.Pid)
		exe, err := filepath.EvalSymlinks("/bin/true")
		if err != nil {
			t.Fatal(err)
		}
		var kinds []Kind
		var last int64
		var paths []string
		withID := 0
		r.Read(func(rec *Record) {
			if rec.Time < last {
				t.Errorf("record %+v before the one of time %d", rec, last)
			}
			last = rec.Time
			if rec.PID != pid {
				return
			}
			if rec.Time < before || rec.Time > after {
				t.Errorf("record %+v not between %d and %d", rec, before, after)
			}
			if len(kinds) == 0 || kinds[len(kinds)-1] != rec.Kind {
				kinds = append(kinds, rec.Kind)
			}
			if rec.Kind == Fork && rec.PPID != uint32(os.Getpid()) {
				t.Errorf("fork from %d, want %d", rec.PPID, os.Getpid())
			}
			if rec.Kind == Mmap {
				paths = append(paths, rec.Path)
				if rec.BuildID != "" {
					withID++
				} else if rec.Ino == 0 && rec.Path == exe {
					t.Errorf("mapping of %s with neither a build id nor an inode: %+v", exe, rec)
				}
			}
		})
		// A Go child is a vfork'd copy of the test until it execs: its
		// mappings are its parent's, and no mapping record comes first.
		if len(kinds) != 4 || kinds[0] != Fork || kinds[1] != Exec || kinds[2] != Mmap || kinds[3] != Exit {
			t.Errorf("build ids %v: kinds %v, want Fork Exec Mmap... Exit", buildID, kinds)
		}
		found := false
		for _, p := range paths {
			found = found || p == exe
		}
		t.Logf("build ids %v: %d of %d mappings with one: %q", buildID, withID, len(paths), paths)
		if !found {
			t.Errorf("no mapping of %s: %q", exe, paths)
		}
		if buildID && r.BuildIDs() && withID == 0 {
			t.Errorf("build ids asked for and granted, none came: %q", paths)
		}
		if buildID != r.BuildIDs() {
			t.Logf("build ids asked for: %v, granted %v", buildID, r.BuildIDs())
		}
		if lost, bad := r.Lost(); lost != 0 || bad != 0 {
			t.Errorf("lost %d, bad %d", lost, bad)
		}
	}
}
