package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// watchBuf collects a process's output and lets one waiter wait for a
// string to appear in it.
type watchBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{}
}

func newWatchBuf() *watchBuf { return &watchBuf{ch: make(chan struct{}, 1)} }

func (w *watchBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *watchBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *watchBuf) has(sub string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Contains(w.b.Bytes(), []byte(sub))
}

// proc is a tool process started through launch (see launch.c), so that
// its peak RSS and CPU time are its own.
type proc struct {
	name           string
	cmd            *exec.Cmd
	start          time.Time
	pid            int // the tool's own pid (launch's child)
	stdout, stderr *watchBuf
	exited         chan struct{} // closed once the tool and launch are done
	maxrssKB       int64
	cpuNs          int64 // user+sys of the whole run
	status         syscall.WaitStatus
	haveUsage      bool
	exitAt         time.Time
}

func (d *driver) startProc(name string, env []string, stdout io.Writer, args ...string) (*proc, error) {
	p := &proc{name: name, stdout: newWatchBuf(), stderr: newWatchBuf(), exited: make(chan struct{})}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(d.launch, args...)
	p.cmd.Env = append(os.Environ(), env...)
	if stdout != nil {
		p.cmd.Stdout = stdout
	} else {
		p.cmd.Stdout = p.stdout
	}
	p.cmd.Stderr = p.stderr
	p.cmd.ExtraFiles = []*os.File{wr}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		rd.Close()
		wr.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	wr.Close()
	pidCh := make(chan int, 1)
	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "pid":
				n, _ := strconv.Atoi(f[1])
				pidCh <- n
			case len(f) == 5 && f[0] == "rusage":
				p.maxrssKB = atoi64(f[1])
				p.cpuNs = (atoi64(f[2]) + atoi64(f[3])) * 1000
				p.status = syscall.WaitStatus(atoi64(f[4]))
				p.haveUsage = true
			}
		}
		rd.Close()
	}()
	go func() {
		p.cmd.Wait()
		<-reportDone
		p.exitAt = time.Now()
		close(p.exited)
	}()
	select {
	case p.pid = <-pidCh:
	case <-p.exited:
		return nil, fmt.Errorf("%s: launch failed: %s", name, p.stderr.String())
	}
	d.track(p)
	return p, nil
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// waitOutput waits until sub appears in w, the process exits or timeout.
func (p *proc) waitOutput(w *watchBuf, sub string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if w.has(sub) {
			return nil
		}
		select {
		case <-w.ch:
		case <-p.exited:
			if w.has(sub) {
				return nil
			}
			return fmt.Errorf("%s exited before it was ready (%v): %s", p.name, p.status, tail(p.stderr.String()))
		case <-deadline.C:
			return fmt.Errorf("%s not ready after %v: %s", p.name, timeout, tail(p.stderr.String()))
		}
	}
}

// stop sends SIGINT (through launch) and waits for the tool to finish.
// bpftrace 0.17 misses a SIGINT that lands outside its epoll_wait (it only
// looks at its flag on EINTR), so it gets another one every 2 seconds.
func (p *proc) stop(timeout time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	end := time.After(timeout)
	resend := time.NewTicker(2 * time.Second)
	defer resend.Stop()
wait:
	for {
		select {
		case <-p.exited:
			return nil
		case <-resend.C:
			if p.name == bpftrace {
				p.cmd.Process.Signal(syscall.SIGINT)
			}
		case <-end:
			break wait
		}
	}
	syscall.Kill(p.pid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("%s did not stop within %v after SIGINT: killed", p.name, timeout)
}

func (p *proc) wait() { <-p.exited }

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// procCPU is the CPU time (ns) of every thread of pid so far, from
// /proc/PID/task/*/schedstat (ns resolution, unlike /proc/PID/stat).
func procCPU(pid int) int64 {
	paths, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum int64
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			sum += atoi64(f[0])
		}
	}
	return sum
}

// workload is one run of the workload binary, started with -w.
type workload struct {
	cmd   *exec.Cmd
	pid   int
	in    io.WriteCloser
	out   *bufio.Scanner
	lines []string
}

type wlResult struct {
	events        int64
	perEventNs    float64 // mean over threads of each thread's loop time / its events
	cpuPerEventNs float64 // the same with each thread's CPU time (-1 if not printed)
	threads       int
	thr           []thrResult // per thread, in the workload's order (thread i on the i-th CPU)
}

// thrResult is one workload thread's line.
type thrResult struct {
	events, ns int64
	cpuNs      int64 // CLOCK_THREAD_CPUTIME_ID over the loop, -1 if not printed
}

// startWorkload starts bin pinned to cpus and returns once it waits for
// the start byte.
func (d *driver) startWorkload(bin, cpus string, threads int, mode string, count int64, seconds float64) (*workload, error) {
	args := []string{"-c", cpus, bin, "-w", "-T", strconv.Itoa(threads), mode}
	if seconds > 0 {
		args = append(args, "-t", strconv.FormatFloat(seconds, 'f', -1, 64))
	} else {
		args = append(args, strconv.FormatInt(count, 10))
	}
	w := &workload{cmd: exec.Command("taskset", args...)}
	w.cmd.Stderr = os.Stderr
	var err error
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start workload: %w", err)
	}
	w.out = bufio.NewScanner(stdout)
	if !w.out.Scan() {
		w.cmd.Wait()
		return nil, fmt.Errorf("workload %s %s: no waiting line", bin, mode)
	}
	f := strings.Fields(w.out.Text())
	if len(f) != 3 || f[0] != "waiting" {
		return nil, fmt.Errorf("workload said %q", w.out.Text())
	}
	w.pid, _ = strconv.Atoi(f[2])
	return w, nil
}

// run lets the workload go and parses its timing.
func (w *workload) run() (wlResult, error) {
	var r wlResult
	if _, err := w.in.Write([]byte{'g'}); err != nil {
		return r, err
	}
	w.in.Close()
	for w.out.Scan() {
		w.lines = append(w.lines, w.out.Text())
	}
	if err := w.cmd.Wait(); err != nil {
		return r, fmt.Errorf("workload: %w", err)
	}
	var sum, cpuSum float64
	haveCPU := true
	for _, l := range w.lines {
		// thread I cpu C events N ns T [cpu_ns T]
		f := strings.Fields(l)
		if len(f) >= 8 && f[0] == "thread" && f[4] == "events" && f[6] == "ns" {
			ev, ns := atoi64(f[5]), atoi64(f[7])
			if ev <= 0 {
				return r, fmt.Errorf("workload line %q", l)
			}
			t := thrResult{events: ev, ns: ns, cpuNs: -1}
			if len(f) >= 10 && f[8] == "cpu_ns" {
				t.cpuNs = atoi64(f[9])
				cpuSum += float64(t.cpuNs) / float64(ev)
			} else {
				haveCPU = false
			}
			r.thr = append(r.thr, t)
			r.events += ev
			r.threads++
			sum += float64(ns) / float64(ev)
		}
	}
	if r.threads == 0 {
		return r, errors.New("workload printed no thread lines")
	}
	r.perEventNs = sum / float64(r.threads)
	r.cpuPerEventNs = -1
	if haveCPU {
		r.cpuPerEventNs = cpuSum / float64(r.threads)
	}
	return r, nil
}

func (w *workload) kill() {
	if w.cmd.Process != nil {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	}
}
