package bpf

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/testutil"
)

var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// requireTracefs returns the tracefs directory, mounting it at
// /sys/kernel/tracing if no tracefs is mounted, or skips the test.
func requireTracefs(tb testing.TB) string {
	tb.Helper()
	for _, d := range tracefsDirs {
		if _, err := os.Stat(filepath.Join(d, "events")); err == nil {
			return d
		}
	}
	if err := unix.Mount("nodev", tracefsDirs[0], "tracefs", 0, ""); err != nil {
		tb.Skipf("skipping: tracefs not mounted and mount failed: %v", err)
	}
	tb.Logf("mounted tracefs at %s", tracefsDirs[0])
	return tracefsDirs[0]
}

// tpField is one field of a tracepoint format file.
type tpField struct {
	off, size uint8
	signed    bool
}

var reField = regexp.MustCompile(`field:[^;]*?([A-Za-z_][A-Za-z0-9_]*)(\[\d*\])?;\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d);`)

// tpFormat parses events/<group>/<name>/format: field offsets differ between
// kernels, so tests take them from the running one.
func tpFormat(tb testing.TB, tracefs, group, name string) map[string]tpField {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(tracefs, "events", group, name, "format"))
	if err != nil {
		tb.Skipf("skipping: tracepoint %s:%s: %v", group, name, err)
	}
	fields := map[string]tpField{}
	for _, m := range reField.FindAllStringSubmatch(string(data), -1) {
		off, _ := strconv.Atoi(m[3])
		size, _ := strconv.Atoi(m[4])
		fields[m[1]] = tpField{off: uint8(off), size: uint8(size), signed: m[5] == "1"}
	}
	return fields
}

func (f tpField) arg(kind uint8) ArgSpec {
	var signed uint8
	if f.signed {
		signed = 1
	}
	return ArgSpec{Kind: kind, Off: int64(f.off), Size: f.size, IsSigned: signed}
}

// buildWorkload compiles testdata/bpfload/workload.c into tb.TempDir() and
// checks that each probed function starts with push %rbp, which uprobes
// emulate; anything else would be single-stepped, an order of magnitude
// slower.
func buildWorkload(tb testing.TB) string {
	tb.Helper()
	exe := testutil.BuildC(tb, "../testdata/bpfload/workload.c", "workload", "-pthread")
	f, err := elf.Open(exe)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range []string{"work", "greet", "deref"} {
		found := false
		for _, s := range syms {
			if s.Name != name || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
				continue
			}
			sec := f.Sections[s.Section]
			b := make([]byte, 1)
			if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
				tb.Fatal(err)
			}
			if b[0] != 0x55 {
				tb.Fatalf("workload: %s starts with %#x, not push %%rbp (0x55)", name, b[0])
			}
			found = true
		}
		if !found {
			tb.Fatalf("workload: no function %s", name)
		}
	}
	return exe
}

// workload is a started test workload blocked on its stdin.
type workload struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout bytes.Buffer
}

func startWorkload(tb testing.TB, exe string, args ...string) *workload {
	tb.Helper()
	w := &workload{cmd: exec.Command(exe, args...)}
	w.cmd.Stdout = &w.stdout
	w.cmd.Stderr = os.Stderr
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	})
	return w
}

func (w *workload) pid() int { return w.cmd.Process.Pid }

// run releases the workload and waits for it, returning its stdout lines.
func (w *workload) run(tb testing.TB) []string {
	tb.Helper()
	if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
		tb.Fatal(err)
	}
	w.stdin.Close()
	if err := w.cmd.Wait(); err != nil {
		tb.Fatalf("workload: %v", err)
	}
	var lines []string
	sc := bufio.NewScanner(&w.stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func attachUprobe(tb testing.TB, exe, sym string, prog *ebpf.Program, cookie uint64, pid int, ret bool) {
	tb.Helper()
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		tb.Fatal(err)
	}
	opts := &link.UprobeOptions{Cookie: cookie, PID: pid}
	var l link.Link
	if ret {
		l, err = ex.Uretprobe(sym, prog, opts)
	} else {
		l, err = ex.Uprobe(sym, prog, opts)
	}
	if err != nil {
		tb.Fatalf("attach to %s: %v", sym, err)
	}
	tb.Cleanup(func() { l.Close() })
}

func attachTracepoint(tb testing.TB, group, name string, prog *ebpf.Program, cookie uint64) {
	tb.Helper()
	l, err := link.Tracepoint(group, name, prog, &link.TracepointOptions{Cookie: cookie})
	if err != nil {
		tb.Fatalf("attach to %s:%s: %v", group, name, err)
	}
	tb.Cleanup(func() { l.Close() })
}

func load(tb testing.TB, opts Options) *Objects {
	tb.Helper()
	objs, err := Load(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	if err := objs.Arm(true); err != nil {
		tb.Fatal(err)
	}
	return objs
}

func putSpec(tb testing.TB, objs *Objects, cookie uint32, s ProbeSpec) {
	tb.Helper()
	if err := objs.PutSpec(cookie, &s); err != nil {
		tb.Fatal(err)
	}
}

func newReader(tb testing.TB, objs *Objects) *Ring {
	tb.Helper()
	rd, err := objs.NewRing()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rd.Close() })
	return rd
}

// collector drains a reader in the background, keeping copies of samples.
type collector struct {
	rd      *Ring
	done    chan error
	mu      sync.Mutex
	samples [][]byte
	arrived []time.Duration // CLOCK_BOOTTIME at receipt minus sample time
}

func collect(tb testing.TB, rd *Ring) *collector {
	c := &collector{rd: rd, done: make(chan error, 1)}
	fn := func(raw []byte) error {
		now := uint64(boottime.Now())
		c.mu.Lock()
		defer c.mu.Unlock()
		c.samples = append(c.samples, bytes.Clone(raw))
		if h, err := DecodeHeader(raw); err == nil {
			c.arrived = append(c.arrived, time.Duration(now-h.Time))
		}
		return nil
	}
	go func() {
		for {
			switch err := rd.Drain(0, fn); {
			case err == nil:
			case errors.Is(err, ErrRingFlushed):
				c.done <- nil
				return
			default:
				c.done <- err
				return
			}
		}
	}()
	return c
}

// finish flushes the reader and returns everything read.
func (c *collector) finish(tb testing.TB) [][]byte {
	tb.Helper()
	if err := c.rd.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := <-c.done; err != nil {
		tb.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.samples
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.samples)
}

func fields(line string, n int) []string { return strings.SplitN(line, " ", n) }

// benchEvents is the number of workload calls a benchmark makes:
// BPFTAPE_BENCH_EVENTS, default 1M.
func benchEvents(tb testing.TB) int {
	tb.Helper()
	s := os.Getenv("BPFTAPE_BENCH_EVENTS")
	if s == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		tb.Fatalf("BPFTAPE_BENCH_EVENTS=%q: want a positive number", s)
	}
	return n
}

// enableRunTimeStats turns on the kernel's BPF run time statistics
// (kernel.bpf_stats_enabled) until the test ends.
func enableRunTimeStats(tb testing.TB) {
	tb.Helper()
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
}
