//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordPrivacy: captures and repaired files are mode 0600 whatever the
// umask; record refuses to overwrite an existing file without --force
// (before the command runs or a probe is attached) and overwrites it with
// it; -o /dev/null needs no --force; info says which strings were copied.
func TestRecordPrivacy(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out, fixed, ran := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "fixed.arrow"), filepath.Join(dir, "ran")
	sh := func(args ...string) result {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		return runBin(t, exec.Command("sh", "-c", "umask 000; exec "+strings.Join(q, " ")))
	}
	if r := sh(bin, "record", "-o", out, "-c", probes+" sizes 3", "U:"+probes+":test:mixed(arg0,str(arg2))", "t:syscalls:sys_exit_write(ret)"); r.code != 0 {
		t.Fatalf("record: exit %d", r.code)
	}
	if r := sh(bin, "repair", out, fixed); r.code != 0 {
		t.Fatalf("repair: exit %d", r.code)
	}
	for _, p := range []string{out, fixed} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v with umask 000, want 0600", p, st.Mode().Perm())
		}
	}

	r := runBin(t, exec.Command(bin, "info", out))
	if !strings.Contains(r.stdout, "captured:     time, cpu, pid, tid and command name of every event; 2 integer fields; strings copied from memory: mixed.arg2\n") {
		t.Errorf("info does not say what was captured:\n%s", r.stdout)
	}

	// An existing file is kept without --force.
	precious := []byte("someone's capture\n")
	os.WriteFile(out, precious, 0o644)
	uprobes := uprobeLines()
	r = runBin(t, exec.Command(bin, "record", "-o", out, "-c", "touch "+ran, "u:"+probes+":tick"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "bpftape record: output "+out+" exists: give --force to replace it") {
		t.Errorf("existing -o: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != string(precious) {
		t.Errorf("existing -o was changed to %q", b)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran although the output exists")
	}
	checkUprobes(t, "existing -o", uprobes)
	if r := runBin(t, exec.Command(bin, "record", "-o", dir, "u:"+probes+":tick")); r.code != exitUsage || !strings.Contains(r.stderr, "is a directory") {
		t.Errorf("-o DIR: exit %d, stderr %q", r.code, r.stderr)
	}

	r = runBin(t, exec.Command(bin, "record", "-o", out, "--force", "-c", probes+" burst 100", "u:"+probes+":tick"))
	if events, _, _ := countEvents(t, out); r.code != 0 || events != 100 {
		t.Errorf("--force: exit %d, %d events", r.code, events)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
		t.Errorf("a 0644 file overwritten with --force has mode %v, want 0600", st.Mode().Perm())
	}

	if r := runBin(t, exec.Command(bin, "record", "-o", "/dev/null", "-c", probes+" burst 100", "u:"+probes+":tick")); r.code != 0 {
		t.Errorf("-o /dev/null: exit %d", r.code)
	}
}
