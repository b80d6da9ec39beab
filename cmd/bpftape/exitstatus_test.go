//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exitProbe is a probe that costs nothing to load and attach.
const exitProbe = "t:syscalls:sys_enter_getpid"

// TestRecordExitStatusTable runs one recording per row of the exit status
// table (docs/exit-status.md) with the real binary, system-wide, with -p
// and with -c: a recording that ended as asked exits 0 with a complete
// capture; with -c, a command that exited by itself gives its status, and
// one that cannot be started 126 or 127.
func TestRecordExitStatusTable(t *testing.T) {
	bin, probes := bpftapeBin(t)
	type stop int
	const (
		byItself stop = iota // -d, or the command or process exits
		bySIGINT
		bySIGTERM
		byGroupSIGINT // Ctrl-C on a terminal: the recorder's whole process group
		byTwoSIGTERMs
	)
	for _, tt := range []struct {
		name     string
		args     []string
		target   []string // -p: a process started for the recording
		stop     stop
		code     int
		stopped  string // the summary's "stopped: ..."; "" for none
		complete bool   // the capture has its footer
		note     string // in the summary, for -c
	}{
		{"system-wide -d", []string{"-d", "0.5"}, nil, byItself, 0, "duration", true, ""},
		{"system-wide SIGINT", nil, nil, bySIGINT, 0, "interrupted", true, ""},
		{"system-wide SIGTERM", nil, nil, bySIGTERM, 0, "interrupted", true, ""},
		{"-p -d", []string{"-d", "0.5"}, []string{"sleep", "60"}, byItself, 0, "duration", true, ""},
		{"-p SIGINT", nil, []string{"sleep", "60"}, bySIGINT, 0, "interrupted", true, ""},
		{"-p SIGTERM", nil, []string{"sleep", "60"}, bySIGTERM, 0, "interrupted", true, ""},
		{"-p process exits", nil, []string{"sleep", "1"}, byItself, 0, "process exited", true, ""},
		{"-c -d", []string{"-d", "0.5", "-c", probes + " spin 60"}, nil, byItself, 0, "duration", true, "stopped as asked (duration)"},
		{"-c SIGINT", []string{"-c", probes + " spin 60"}, nil, bySIGINT, 0, "interrupted", true, "stopped as asked (interrupted)"},
		{"-c SIGTERM", []string{"-c", probes + " spin 60"}, nil, bySIGTERM, 0, "interrupted", true, "stopped as asked (interrupted)"},
		{"-c Ctrl-C", []string{"-c", probes + " spin 60"}, nil, byGroupSIGINT, 0, "", true, "stopped as asked (interrupted)"},
		// A command that ignores SIGTERM holds the recording for 2 s,
		// during which the second SIGTERM comes.
		{"-c two SIGTERMs", []string{"-c", "sh -c 'trap \"\" TERM; exec " + probes + " spin 60'"}, nil, byTwoSIGTERMs, 128 + 15, "", false, ""},
		{"-c exit 0", []string{"-c", probes + " exit 0"}, nil, byItself, 0, "command exited", true, "the command exited with status 0"},
		{"-c exit 7", []string{"-d", "60", "-c", probes + " exit 7"}, nil, byItself, 7, "command exited", true, "the command exited with status 7"},
		{"-c killed", []string{"-c", "sh -c 'kill -USR1 $$'"}, nil, byItself, 128 + 10, "command exited", true, "killed by signal 10, SIGUSR1"},
		{"-c not found", []string{"-c", "no-such-command-here"}, nil, byItself, 127, "", false, ""},
		{"-c missing path", []string{"-c", "./no/such/file"}, nil, byItself, 127, "", false, ""},
		{"-c not executable", []string{"-c", "/etc/passwd"}, nil, byItself, 126, "", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, ready := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready")
			args := append([]string{"record", "-o", out, "--ready-file", ready}, tt.args...)
			if tt.target != nil {
				target := exec.Command(tt.target[0], tt.target[1:]...)
				if err := target.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { target.Process.Kill(); target.Wait() }()
				go target.Wait() // reaped when it exits, so that -p sees it go
				args = append(args, "-p", strconv.Itoa(target.Process.Pid))
			}
			cmd := exec.Command(bin, append(args, exitProbe)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			done := make(chan result, 1)
			go func() { done <- runBin(t, cmd) }()
			if tt.stop != byItself {
				waitFile(t, ready, 20*time.Second)
				time.Sleep(300 * time.Millisecond)
				switch tt.stop {
				case bySIGINT:
					cmd.Process.Signal(syscall.SIGINT)
				case bySIGTERM:
					cmd.Process.Signal(syscall.SIGTERM)
				case byGroupSIGINT:
					syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
				case byTwoSIGTERMs:
					cmd.Process.Signal(syscall.SIGTERM)
					time.Sleep(repeatGrace + 200*time.Millisecond) // sooner is the same stop
					cmd.Process.Signal(syscall.SIGTERM)
				}
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatal("the recording did not end")
			}
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			if tt.stopped != "" && !strings.Contains(r.stderr, "stopped: "+tt.stopped+" ]") {
				t.Errorf("stderr lacks 'stopped: %s'", tt.stopped)
			}
			if tt.note != "" && !strings.Contains(r.stderr, tt.note) {
				t.Errorf("stderr lacks %q", tt.note)
			}
			switch {
			case tt.code == exitNotFound || tt.code == exitCannotRun:
				if !strings.HasPrefix(r.stderr, "bpftape record: command ") || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("stderr %q: want one line naming the command", r.stderr)
				}
				if _, err := os.Stat(out); err == nil {
					t.Error("a command that could not be started left a capture")
				}
			case tt.complete:
				if _, _, recovered := countEvents(t, out); recovered {
					t.Error("the capture has no footer")
				}
			default:
				if _, _, recovered := countEvents(t, out); !recovered {
					t.Error("an aborted capture has its footer")
				}
			}
		})
	}
}

// TestRecordExitStatusHelp: record --help has the exit status table.
func TestRecordExitStatusHelp(t *testing.T) {
	bin, _ := bpftapeBin(t)
	r := runBin(t, exec.Command(bin, "record", "--help"))
	for _, want := range []string{"Exit status", "ended as asked", "126", "127", "130"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("record --help lacks %q", want)
		}
	}
}
