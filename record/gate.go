package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// GateArg is the hidden first argument with which the recorder re-executes
// its own binary as the gate of a -c command:
//
//	bpftape __exec FD PATH -- ARGV...
//
// The gate waits for one byte on the inherited file descriptor FD, then
// executes PATH with ARGV in its own process, so the command keeps the pid
// the recorder knew (and filtered on) before loading and attaching its
// probes. If the recorder goes away first, the gate reads end of file and
// exits with status 127 without running anything.
const GateArg = "__exec"

// MaybeRunGate turns this process into the gate if it was started as one
// (os.Args[1] == GateArg) and never returns then; otherwise it does
// nothing. Call it from an init function of package main (or of the tests
// that record with Options.Command): init functions run on the process's
// main thread, and the gate must exec from it. A non-main thread that
// execs takes over the process id but not the identity perf events were
// opened for: the kernel would no longer apply the recorder's per-process
// uprobes to the command.
func MaybeRunGate() {
	if len(os.Args) > 1 && os.Args[1] == GateArg {
		runtime.LockOSThread()
		os.Exit(runGate(os.Args[2:], os.Stderr))
	}
}

func runGate(args []string, stderr io.Writer) int {
	if tid, pid := unix.Gettid(), unix.Getpid(); tid != pid {
		fmt.Fprintf(stderr, "bpftape %s: running on thread %d, not the main thread %d: call record.MaybeRunGate from an init function\n", GateArg, tid, pid)
		return 127
	}
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintf(stderr, "bpftape %s: want FD PATH -- ARGV...\n", GateArg)
		return 127
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil || fd < 3 {
		fmt.Fprintf(stderr, "bpftape %s: bad fd %q\n", GateArg, args[0])
		return 127
	}
	var b [1]byte
	for {
		n, err := unix.Read(fd, b[:])
		if err == unix.EINTR {
			continue
		}
		if n != 1 {
			return 127 // the recorder gave up before attaching
		}
		break
	}
	unix.Close(fd)
	err = unix.Exec(args[1], args[3:], os.Environ())
	fmt.Fprintf(stderr, "bpftape: cannot run %s: %v\n", args[3], err)
	return 127
}

// gate is a command started blocked behind a gate process.
type gate struct {
	cmd     *exec.Cmd
	release *os.File // write end of the gate's pipe
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
}

// startGate starts argv (argv[0] resolved on PATH) blocked behind the gate
// exe. The process exists, with its final pid, when startGate returns.
func startGate(exe string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (*gate, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{GateArg, "3", path, "--"}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	r.Close()
	g := &gate{cmd: cmd, release: w, done: make(chan struct{})}
	go func() {
		g.waitErr = cmd.Wait()
		g.state = cmd.ProcessState
		close(g.done)
	}()
	return g, nil
}

func (g *gate) pid() int { return g.cmd.Process.Pid }

// open lets the command run.
func (g *gate) open() error {
	_, err := g.release.Write([]byte{1})
	g.release.Close()
	return err
}

// abort makes a gate that was never opened exit without running the
// command, and waits for it.
func (g *gate) abort() {
	g.release.Close()
	<-g.done
}

func (g *gate) exited() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the command unless it has exited.
func (g *gate) signal(sig syscall.Signal) {
	if !g.exited() {
		g.cmd.Process.Signal(sig)
	}
}

// exitCode is the command's exit status as a shell reports it: its exit
// code, or 128 + the signal that killed it.
func (g *gate) exitCode() int {
	<-g.done
	if g.state == nil {
		return 127
	}
	if ws, ok := g.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var ee *exec.ExitError
	if g.waitErr != nil && !errors.As(g.waitErr, &ee) {
		return 127
	}
	return g.state.ExitCode()
}
