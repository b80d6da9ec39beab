//go:build linux && amd64

package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openDir makes a temporary folder that nobody can enter, with a copy of
// bin in it that nobody can run.
func openDir(t *testing.T, bin string) (dir, exe string) {
	t.Helper()
	dir = t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "bpftape")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, exe
}

// asNobody runs exe with args as user and group nobody.
func asNobody(t *testing.T, exe string, args ...string) result {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return runBin(t, cmd)
}

func checkOwner(t *testing.T, path string, uid, gid uint32, mode os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != uid || sys.Gid != gid || st.Mode().Perm() != mode {
		t.Errorf("%s: owner %d:%d, mode %04o; want %d:%d, %04o", path, sys.Uid, sys.Gid, st.Mode().Perm(), uid, gid, mode)
	}
}

// TestRecordOwner: --owner gives the capture to a user (mode 0600) or to
// a user and a group (mode 0640), who then read it without root; with
// --force the replacing capture is given too.
func TestRecordOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root")
	}
	bin, _ := bpftapeBin(t)
	dir, exe := openDir(t, bin)
	for _, tt := range []struct {
		owner    string
		uid, gid uint32
		mode     os.FileMode
	}{
		{"nobody", nobody, 0, 0o600},
		{"65534:65534", nobody, nobody, 0o640},
		{":65534", 0, nobody, 0o640},
	} {
		out := filepath.Join(dir, "c.arrow")
		for _, force := range []string{"--force=false", "--force"} {
			r := runBin(t, exec.Command(bin, "record", "-o", out, force, "--owner", tt.owner, "-d", "0.3", exitProbe))
			if r.code != exitOK {
				t.Fatalf("--owner %s %s: exit %d", tt.owner, force, r.code)
			}
			checkOwner(t, out, tt.uid, tt.gid, tt.mode)
		}
		if tt.uid == nobody || tt.gid == nobody {
			if r := asNobody(t, exe, "info", out); r.code != exitOK {
				t.Errorf("--owner %s: info as nobody: exit %d", tt.owner, r.code)
			}
		}
		os.Remove(out)
	}
}

// TestRecordOwnerRotate: every part of a rotated capture is given to
// the --owner.
func TestRecordOwnerRotate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root")
	}
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.arrow")
	r := runBin(t, exec.Command(bin, "record", "-o", out, "--owner", "nobody", "--max-size", "64K", "--rotate", "3",
		"-d", "2", "-c", probes+" spin 20", "tick=u:"+probes+":tick(arg0)"))
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "c.*.arrow"))
	if len(parts) < 2 {
		t.Fatalf("parts %q: want a rotation at least", parts)
	}
	for _, p := range parts {
		checkOwner(t, p, nobody, 0, 0o600)
	}
}

// TestRecordOwnerInPlace: a FIFO written in place keeps its owner and mode.
func TestRecordOwnerInPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root")
	}
	bin, _ := bpftapeBin(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o620); err != nil {
		t.Fatal(err)
	}
	os.Chmod(fifo, 0o620) // whatever the umask
	read := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			_, err = io.Copy(io.Discard, f)
			f.Close()
		}
		read <- err
	}()
	r := runBin(t, exec.Command(bin, "record", "-o", fifo, "--owner", "nobody:65534", "-d", "0.3", exitProbe))
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(fifo)
	if err != nil {
		t.Fatal(err)
	}
	checkOwner(t, fifo, 0, 0, 0o620)
	if st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s is no longer a FIFO", fifo)
	}
}

// TestRecordOwnerUsage: an --owner that names no user or group is a usage
// error, refused before anything is recorded.
func TestRecordOwnerUsage(t *testing.T) {
	bin, _ := bpftapeBin(t)
	out := filepath.Join(t.TempDir(), "c.arrow")
	for _, owner := range []string{"no-such-user-here", "nobody:no-such-group-here", ":", "nobody:"} {
		r := runBin(t, exec.Command(bin, "record", "-o", out, "--owner", owner, "-d", "0.3", exitProbe))
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, "bpftape record: --owner") {
			t.Errorf("--owner %q: exit %d, stderr %q", owner, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--owner %q: a capture was written", owner)
		}
	}
}

// TestOwnerOnlyCaptureHint: a verb run by a user who may not read a
// root-owned 0600 capture fails with exit 1 and one line that says why
// and what to do.
func TestOwnerOnlyCaptureHint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root")
	}
	bin, _ := bpftapeBin(t)
	dir, exe := openDir(t, bin)
	out := filepath.Join(dir, "c.arrow")
	if r := runBin(t, exec.Command(bin, "record", "-o", out, "-d", "0.3", exitProbe)); r.code != exitOK {
		t.Fatalf("record: exit %d", r.code)
	}
	checkOwner(t, out, 0, 0, 0o600)
	for _, args := range [][]string{
		{"info", out},
		{"count", out},
		{"events", out},
		{"hist", out, "sys_enter_getpid"},
	} {
		r := asNobody(t, exe, args...)
		want := "bpftape " + args[0] + ": open " + out + ": permission denied (the file is owner-only, mode 0600, owned by root: " +
			"read it as root, or record with --owner nobody, or run 'sudo chown nobody " + out + "')\n"
		if r.code != exitFailure || r.stderr != want {
			t.Errorf("%v as nobody: exit %d, stderr %q; want 1, %q", args, r.code, r.stderr, want)
		}
	}
	// Readable by a group nobody is not in: the hint names the group.
	if err := os.Chmod(out, 0o640); err != nil {
		t.Fatal(err)
	}
	r := asNobody(t, exe, "info", out)
	if r.code != exitFailure || !strings.Contains(r.stderr, "mode 0640, readable by group root, owned by root: read it as root or a member of root") {
		t.Errorf("0640: exit %d, stderr %q", r.code, r.stderr)
	}
}
