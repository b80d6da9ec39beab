//go:build linux && (amd64 || arm64)

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/bpftape/bpftape/internal/usage"
)

func init() {
	register("snapshot", snapshotSummary, runSnapshot)
}

const snapshotSynopsis = `PID | --ready-file PATH`

const snapshotHelp = `
Asks a flight recorder ('bpftape record --flight DURATION') for a snapshot:
it writes the last DURATION it holds as FILE-NNNN.arrow, an ordinary
capture, and names it on its standard error. This is what SIGUSR1 does
(kill -USR1 PID); snapshot checks first that PID is a flight recorder, so
that it never stops another process. PID is the recorder's process, or
the pid= line of the file its --ready-file wrote.

Examples:
  bpftape record --flight 30s --ready-file /run/fr.ready -o /var/tmp/srv.arrow -p $(pidof server) 'u:server:handle(arg0)' &
  bpftape snapshot --ready-file /run/fr.ready      # writes /var/tmp/srv-0001.arrow
  bpftape info /var/tmp/srv-0001.arrow             # its trigger and window

Exit status: 0 asked, 1 PID is not a flight recorder or the signal failed,
2 a usage error.
`

func runSnapshot(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("snapshot", snapshotSynopsis, snapshotHelp, stdout)
	ready := fs.String("ready-file", "", "read the recorder's pid from `PATH`, the --ready-file it wrote")
	rest, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return fail(stderr, "snapshot", err)
	}
	var pid int
	switch {
	case *ready != "" && len(rest) == 0:
		if pid, err = readyPID(*ready); err != nil {
			return fail(stderr, "snapshot", err)
		}
	case *ready == "" && len(rest) == 1:
		if pid, err = strconv.Atoi(rest[0]); err != nil || pid <= 0 {
			return fail(stderr, "snapshot", usage.Errorf("%q is not a process id", rest[0]))
		}
	default:
		return fail(stderr, "snapshot", usage.Errorf("give the recorder's PID or --ready-file PATH, not both"))
	}
	if err := isFlightRecorder(pid); err != nil {
		return fail(stderr, "snapshot", err)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fail(stderr, "snapshot", fmt.Errorf("signal process %d: %w", pid, err))
	}
	fmt.Fprintf(stdout, "asked the flight recorder (pid %d) for a snapshot: it names the file on its standard error\n", pid)
	return exitOK
}

// readyPID reads the pid= line of a recorder's --ready-file.
func readyPID(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("--ready-file: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "pid="); ok {
			if pid, err := strconv.Atoi(v); err == nil && pid > 0 {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("--ready-file %s: no pid= line (is it a bpftape record --ready-file?)", path)
}

// isFlightRecorder checks that pid runs 'bpftape record --flight ...'.
func isFlightRecorder(pid int) error {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no process %d", pid)
		}
		return err
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	record, flight := false, false
	for i, a := range args {
		s := string(a)
		if i > 0 && s == "record" && !record {
			record = true
			continue
		}
		if record && (s == "--flight" || s == "-flight" || strings.HasPrefix(s, "--flight=") || strings.HasPrefix(s, "-flight=")) {
			flight = true
		}
	}
	if !record || !flight {
		return fmt.Errorf("process %d is not a flight recorder (bpftape record --flight): not signalled", pid)
	}
	return nil
}
