package record

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// Record re-executes the test binary as the gate of Options.Command; the
// gate must run from an init function (see MaybeRunGate).
func init() { MaybeRunGate() }

func buildProbes(tb testing.TB) string { return testutil.BuildC(tb, "testdata/probes.c", "probes") }
func buildDemo(tb testing.TB) string {
	return testutil.BuildC(tb, "../testdata/demo/virtnet.c", "virtnet")
}

// record runs Record with a deadline and a buffer for the command's output.
func record(tb testing.TB, o Options) (*Summary, error, string) {
	tb.Helper()
	if o.Output == "" {
		o.Output = filepath.Join(tb.TempDir(), "capture.arrow")
	}
	var out bytes.Buffer
	if o.Stdout == nil {
		o.Stdout = &out
	}
	var log bytes.Buffer
	if o.Log == nil {
		o.Log = &log
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Record(ctx, o)
	if log.Len() > 0 {
		tb.Logf("log:\n%s", log.String())
	}
	if s != nil {
		var b strings.Builder
		s.Print(&b)
		tb.Logf("summary:\n%s", b.String())
	}
	return s, err, out.String()
}

func mustRecord(tb testing.TB, o Options) (*Summary, string) {
	tb.Helper()
	s, err, out := record(tb, o)
	if err != nil {
		tb.Fatalf("Record: %v", err)
	}
	return s, out
}

// row is one event of a capture.
type row struct {
	time int64
	pid  uint32
	tid  uint32
	cpu  uint16
	comm string
	ints map[string]int64
	strs map[string]string
}

// capture is a whole capture read into memory, by probe name.
type capture struct {
	meta      *format.Meta
	rows      map[string][]row
	lost      map[string]uint64
	lossRows  int
	recovered bool
}

func readCapture(tb testing.TB, path string) *capture {
	tb.Helper()
	r, err := format.Open(path)
	if err != nil {
		tb.Fatalf("open capture: %v", err)
	}
	defer r.Close()
	c := &capture{meta: r.Meta, rows: map[string][]row{}, lost: map[string]uint64{}, recovered: r.Recovered}
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			p := &r.Meta.Probes[b.Probe[i]]
			if n, ok := b.Lost(i); ok {
				c.lost[p.Name] += n
				c.lossRows++
				continue
			}
			rw := row{time: b.Time[i], pid: b.PID[i], tid: b.TID[i], cpu: b.CPU[i], comm: b.Comm(i),
				ints: map[string]int64{}, strs: map[string]string{}}
			for _, f := range p.Fields {
				col := b.Col(r.Column(f.Column))
				if !col.Valid(i) {
					tb.Fatalf("probe %s field %s: null in an event row", p.Name, f.Name)
				}
				if f.Type == format.String {
					rw.strs[f.Name] = col.Str(i)
				} else {
					rw.ints[f.Name] = col.Int(i)
				}
			}
			c.rows[p.Name] = append(c.rows[p.Name], rw)
		}
	}
	if err := r.Err(); err != nil {
		tb.Fatalf("read capture: %v", err)
	}
	return c
}

func (c *capture) probe(tb testing.TB, name string) *format.Probe {
	tb.Helper()
	_, p := c.meta.Probe(name)
	if p == nil {
		tb.Fatalf("capture has no probe %q; it has %q", name, c.meta.ProbeNames())
	}
	return p
}

func (c *capture) fieldType(tb testing.TB, probe, field string) format.Type {
	tb.Helper()
	p := c.probe(tb, probe)
	i := p.Field(field)
	if i < 0 {
		tb.Fatalf("probe %s has no field %s: %+v", probe, field, p.Fields)
	}
	return p.Fields[i].Type
}

// lines splits output into lines of space-separated words.
func lines(s string) [][]string {
	var out [][]string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func atou(tb testing.TB, s string) uint64 {
	tb.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// log2Low is the bucket a ground-truth "hist NAME LOW N" line counts v in.
func log2Low(v uint64) uint64 {
	if v == 0 {
		return 0
	}
	low := uint64(1)
	for v > 1 {
		v >>= 1
		low <<= 1
	}
	return low
}

// truth is a workload's "count/sum/hist" ground truth.
type truth struct {
	count map[string]uint64
	sum   map[string]uint64
	hist  map[string]map[uint64]uint64
}

func parseTruth(tb testing.TB, out string) truth {
	tb.Helper()
	t := truth{count: map[string]uint64{}, sum: map[string]uint64{}, hist: map[string]map[uint64]uint64{}}
	for _, f := range lines(out) {
		switch f[0] {
		case "count":
			t.count[f[1]] = atou(tb, f[2])
		case "sum":
			t.sum[f[1]] = atou(tb, f[2])
		case "hist":
			if t.hist[f[1]] == nil {
				t.hist[f[1]] = map[uint64]uint64{}
			}
			t.hist[f[1]][atou(tb, f[2])] = atou(tb, f[3])
		}
	}
	if len(t.count) == 0 {
		tb.Fatalf("no ground truth in workload output:\n%s", out)
	}
	return t
}

// openFDs counts this process's open file descriptors.
func openFDs(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

func uprobeEvents(tb testing.TB) string {
	tb.Helper()
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if b, err := os.ReadFile(filepath.Join(d, "uprobe_events")); err == nil {
			return string(b)
		}
	}
	return ""
}

// buildGo builds a small Go program, for the Go-binary warnings.
func buildGo(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	src := filepath.Join(dir, "main.go")
	err := os.WriteFile(src, []byte("package main\n\n//go:noinline\nfunc work(n int) int { return n * 2 }\n\nfunc main() { println(work(21)) }\n"), 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	exe := filepath.Join(dir, "goprog")
	cmd := exec.Command("go", "build", "-o", exe, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build Go program: %v\n%s", err, out)
	}
	return exe
}

// startWaiting starts a workload run with -w, which waits for a line on
// stdin before it begins, so that a test can attach to its pid first; the
// process is killed when the test ends.
func startWaiting(tb testing.TB, exe string, args ...string) (*exec.Cmd, io.WriteCloser, *bytes.Buffer) {
	tb.Helper()
	cmd := exec.Command(exe, append([]string{"-w"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, in, &out
}

// whenReady calls f once the recorder wrote its ready file (every probe
// attached), after a further delay, from a goroutine of its own.
func whenReady(ready string, delay time.Duration, f func()) {
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(delay)
		f()
	}()
}
