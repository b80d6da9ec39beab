//go:build linux && amd64

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// printedInterval is one interval of record --print's output.
type printedInterval struct {
	span     string            // "--from 1s --to 2s", or "--from 2s" for the last
	sections map[string]string // by --print text: what it printed
}

var liveHeader = regexp.MustCompile(`(?m)^--- \d\d:\d\d:\d\d(?:\.\d{3})? \((--from \S+(?: --to \S+)?)\) ---\n`)

// parseLive splits record --print's output into its intervals and each
// into the output of each --print (prints, in order).
func parseLive(t *testing.T, out string, prints []string) []printedInterval {
	t.Helper()
	locs := liveHeader.FindAllStringSubmatchIndex(out, -1)
	if len(locs) == 0 {
		t.Fatalf("no interval header in %q", out)
	}
	if locs[0][0] != 0 {
		t.Errorf("output before the first interval: %q", out[:locs[0][0]])
	}
	var ivs []printedInterval
	for i, loc := range locs {
		end := len(out)
		if i+1 < len(locs) {
			end = locs[i+1][0] - 1
			if out[end] != '\n' {
				t.Fatalf("no blank line before interval %d", i+1)
			}
		}
		body := out[loc[1]:end]
		iv := printedInterval{span: out[loc[2]:loc[3]], sections: map[string]string{}}
		if len(prints) == 1 {
			iv.sections[prints[0]] = body
		} else {
			for j, p := range prints {
				marker := "# " + p + "\n"
				if !strings.HasPrefix(body, marker) {
					t.Fatalf("interval %d: section %d does not start with %q: %q", i, j, marker, body)
				}
				body = body[len(marker):]
				next := len(body)
				if j+1 < len(prints) {
					if next = strings.Index(body, "\n# "+prints[j+1]+"\n"); next < 0 {
						t.Fatalf("interval %d: no section %q", i, prints[j+1])
					}
					next++
				}
				iv.sections[p] = body[:next]
				body = body[next:]
			}
		}
		ivs = append(ivs, iv)
	}
	return ivs
}

var bccBucket = regexp.MustCompile(`(?m)^\s*(\d+) -> (\d+)\s*: (\d+)`)

// bccBuckets parses a BCC log2 histogram: count by bucket start.
func bccBuckets(t *testing.T, s string) map[uint64]uint64 {
	t.Helper()
	m := map[uint64]uint64{}
	for _, g := range bccBucket.FindAllStringSubmatch(s, -1) {
		lo, _ := strconv.ParseUint(g[1], 10, 64)
		n, _ := strconv.ParseUint(g[3], 10, 64)
		if n > 0 {
			m[lo] += n
		}
	}
	return m
}

func sumBuckets(m map[uint64]uint64) (n uint64) {
	for _, c := range m {
		n += c
	}
	return n
}

// liveTestMeta is a capture of two probes with an integer field each.
func liveTestMeta() *format.Meta {
	start := int64(1_000_000_000_000)
	return &format.Meta{Tool: "bpftape test", StartWall: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), StartBoot: start,
		Window: &format.Window{Start: start},
		Probes: []format.Probe{
			{Name: "p", Kind: "uprobe", Fields: []format.Field{{Name: "v", Type: format.Uint64}}},
			{Name: "q", Kind: "uprobe", Fields: []format.Field{{Name: "v", Type: format.Int32}}},
		}}
}

// TestLiveViewIntervals feeds a live view as the drainer would (events a
// little out of time order, a loss record, a watermark that lags) and
// checks every printed interval against the offline verbs over the whole
// capture with the interval's --from and --to, and that the intervals add
// up to the whole capture.
func TestLiveViewIntervals(t *testing.T) {
	prints := []string{"hist p v", "count", "latency p q"}
	var ps []livePrint
	for _, s := range prints {
		p, err := parsePrint(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	var out, errb bytes.Buffer
	v := newLiveView(ps, time.Second, &out, &errb)
	meta := liveTestMeta()
	if err := v.Check(copyMeta(meta).Probes); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.arrow")
	w, err := format.Create(path, copyMeta(meta), format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(w.Meta())
	origin := meta.StartBoot
	ev := format.Event{CPU: 1, PID: 7, TID: 7, Comm: []byte("app"), Ints: make([]uint64, 1)}
	const n = 3100
	for i := range n {
		j := i
		// Pairs out of time order, across the interval boundaries too.
		if i%2 == 0 && i+1 < n {
			j = i + 1
		} else if i%2 == 1 {
			j = i - 1
		}
		ev.Time = origin + int64(j)*int64(time.Millisecond) + 500_000
		ev.Probe = uint16(j % 2)
		ev.Ints[0] = uint64(j * 37 % 5000)
		if err := w.Append(&ev); err != nil {
			t.Fatal(err)
		}
		v.Event(&ev)
		if i%100 == 99 {
			v.Seen(ev.Time - int64(5*time.Millisecond))
		}
		if i == 1500 {
			if err := w.Lost(0, 3, ev.Time, 7); err != nil {
				t.Fatal(err)
			}
			v.Lost(0, 3, ev.Time, 7)
		}
	}
	// An event of an interval already printed is left out and counted.
	late := ev
	late.Time = origin + int64(500*time.Millisecond)
	v.Event(&late)
	end := origin + int64(3200*time.Millisecond)
	w.Meta().Window.End = end
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	v.Finish(end)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())

	ivs := parseLive(t, out.String(), prints)
	spans := []string{"--from 0s --to 1s", "--from 1s --to 2s", "--from 2s --to 3s", "--from 3s"}
	if len(ivs) != len(spans) {
		t.Fatalf("%d intervals, want %d", len(ivs), len(spans))
	}
	total := map[uint64]uint64{}
	for i, iv := range ivs {
		if iv.span != spans[i] {
			t.Errorf("interval %d: %q, want %q", i, iv.span, spans[i])
		}
		for _, p := range ps {
			args := append(append([]string{p.verb, path}, p.args...), strings.Fields(iv.span)...)
			var o, e bytes.Buffer
			if code := run(args, &o, &e); code != exitOK {
				t.Fatalf("%v: exit %d: %s", args, code, e.String())
			}
			// Offline, count's loss line has the whole capture's
			// losses, whatever --from and --to; an interval's, its own.
			want, got := o.String(), iv.sections[p.text]
			if p.verb == "count" {
				want = strings.ReplaceAll(want, countLost, "")
				if i == 1 {
					want += countLost
				}
			}
			if got != want {
				t.Errorf("interval %s, %s: live printed\n%s\noffline prints\n%s", iv.span, p.text, got, want)
			}
		}
		for lo, c := range bccBuckets(t, iv.sections["hist p v"]) {
			total[lo] += c
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"hist", path, "p", "v"}, &o, &e); code != exitOK {
		t.Fatal(e.String())
	}
	whole := bccBuckets(t, o.String())
	if fmt.Sprint(total) != fmt.Sprint(whole) || sumBuckets(whole) != n/2 {
		t.Errorf("intervals add up to %v, the capture has %v (%d events)", total, whole, sumBuckets(whole))
	}
	for _, want := range []string{"WARNING: 7 events were lost (p 7; cpu3 7) between +1.502s", "--print: 1 event came after its interval was printed"} {
		if strings.Count(errb.String(), want) != 1 {
			t.Errorf("stderr has not once %q", want)
		}
	}
	if strings.Contains(errb.String(), "/proc/self/fd") {
		t.Errorf("stderr names the interval's memfd")
	}
}

const countLost = "(7 events of these probes were lost: the counts are low by that much in all)\n"

// TestLivePrintFlags: --print and --interval mistakes that need no probe.
func TestLivePrintFlags(t *testing.T) {
	for _, tt := range []struct {
		prints   []string
		interval string
		want     string
	}{
		{nil, "1s", "--interval needs --print"},
		{[]string{"frobnicate x"}, "", `"frobnicate" is not a verb --print runs; it runs compare, count, events, hist, latency, requests`},
		{[]string{"stacks p"}, "", `"stacks" is not a verb --print runs`},
		{[]string{""}, "", "want an analysis verb"},
		{[]string{"hist 'p v"}, "", "unterminated"},
		{[]string{"hist p v --help"}, "", "see 'bpftape hist --help'"},
		{[]string{"count"}, "10ms", "--interval 10ms: at least 100ms"},
		{[]string{"count"}, "soon", "--interval: bad duration"},
	} {
		_, err := newLiveFlags(tt.prints, tt.interval, "c.arrow", nil, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q %q: %v, want %q", tt.prints, tt.interval, err, tt.want)
		}
	}
}

// TestLiveCheck: a --print naming what the probes lack is a usage error,
// one line, naming the --print, before anything is attached.
func TestLiveCheck(t *testing.T) {
	for _, tt := range []struct{ print, want string }{
		{"hist p nosuch", `--print "hist p nosuch": probe p has no field "nosuch"; its fields: v`},
		{"hist nosuch v", `--print "hist nosuch v": no probe "nosuch"; the capture has: p, q`},
		{"latency p p", `entry and return are the same probe "p"`},
		{"hist p v --linear 1,2", `--linear "1,2": want MIN,MAX,STEP`},
		{"count --by nothing", `--print "count --by nothing": `},
	} {
		p, err := parsePrint(tt.print)
		if err != nil {
			t.Fatal(err)
		}
		v := newLiveView([]livePrint{p}, time.Second, nil, nil)
		err = v.Check(liveTestMeta().Probes)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), "/proc/self") || fail(&bytes.Buffer{}, "record", err) != exitUsage {
			t.Errorf("%q: %v, want a usage error with %q", tt.print, err, tt.want)
		}
	}
	p, _ := parsePrint("hist p v --by comm")
	if err := newLiveView([]livePrint{p}, time.Second, nil, nil).Check(liveTestMeta().Probes); err != nil {
		t.Errorf("hist p v --by comm: %v", err)
	}
}

// TestLiveRecord records the probes workload with --print and checks
// each printed interval against the offline verbs over the capture with
// the interval's --from and --to, that the intervals add up to the whole
// capture, and that the capture has every call the workload made.
func TestLiveRecord(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out, truth := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "truth")
	prints := []string{"hist tick arg0", "count --by comm"}
	// tick starts with push %rbp, which the kernel emulates: a cheap uprobe.
	args := []string{"record", "-o", out, "--interval", "1s", "--ringbuf-size", "4M",
		"-c", fmt.Sprintf("sh -c '%s spin 3 > %s'", probes, truth), "u:" + probes + ":tick(arg0)"}
	for _, p := range prints {
		args = append(args, "--print", p)
	}
	cmd := exec.Command(bin, args...)
	tw := &timedWriter{}
	cmd.Stdout = tw
	r := runBin(t, cmd)
	ended := time.Now()
	r.stdout = tw.String()
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	t.Logf("stdout:\n%s", r.stdout)
	// Live: the first interval came while the 3 s workload still ran.
	if len(tw.headers) == 0 || ended.Sub(tw.headers[0]) < time.Second {
		t.Errorf("the first interval came %v before the recording ended", ended.Sub(tw.headers[0]))
	}
	var calls uint64
	b, err := os.ReadFile(truth)
	if _, serr := fmt.Sscanf(string(b), "spin %d", &calls); err != nil || serr != nil {
		t.Fatalf("truth %q: %v %v", b, err, serr)
	}
	events, lost, _ := countEvents(t, out)
	if events != calls || lost != 0 {
		t.Errorf("capture: %d events, %d lost; the workload made %d calls", events, lost, calls)
	}

	ivs := parseLive(t, r.stdout, prints)
	if len(ivs) < 3 {
		t.Fatalf("%d intervals in a recording of more than 3s", len(ivs))
	}
	total := map[uint64]uint64{}
	for i, iv := range ivs {
		want := fmt.Sprintf("--from %ds --to %ds", i, i+1)
		if i == len(ivs)-1 {
			want = fmt.Sprintf("--from %ds", i)
		}
		if iv.span != want {
			t.Errorf("interval %d: %q, want %q", i, iv.span, want)
		}
		for _, p := range prints {
			verb, rest, _ := strings.Cut(p, " ")
			args := append(append([]string{verb, out}, strings.Fields(rest)...), strings.Fields(iv.span)...)
			o := runBin(t, exec.Command(bin, args...))
			if o.code != 0 {
				t.Fatalf("%v: exit %d", args, o.code)
			}
			if got := iv.sections[p]; got != o.stdout {
				t.Errorf("interval %s, %s: live printed\n%s\noffline prints\n%s", iv.span, p, got, o.stdout)
			}
		}
		for lo, c := range bccBuckets(t, iv.sections["hist tick arg0"]) {
			total[lo] += c
		}
	}
	o := runBin(t, exec.Command(bin, "hist", out, "tick", "arg0"))
	whole := bccBuckets(t, o.stdout)
	if fmt.Sprint(total) != fmt.Sprint(whole) || sumBuckets(whole) != calls {
		t.Errorf("intervals add up to %v (%d), the capture has %v (%d), the workload made %d calls",
			total, sumBuckets(total), whole, sumBuckets(whole), calls)
	}
	if strings.Contains(r.stderr, "--print:") {
		t.Errorf("the live view left events out: %s", r.stderr)
	}
}

// timedWriter keeps what is written and when each interval header came.
type timedWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	headers []time.Time
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	for len(w.headers) < len(liveHeader.FindAllStringIndex(w.b.String(), -1)) {
		w.headers = append(w.headers, time.Now())
	}
	return len(p), nil
}

func (w *timedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestLiveRecordUsage: a --print the recording cannot run exits 2 with a
// one-line error before anything starts: no capture, no command run.
func TestLiveRecordUsage(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out, ran := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ran")
	for _, tt := range []struct{ print, want string }{
		{"frobnicate tick", `bpftape record: --print "frobnicate tick": "frobnicate" is not a verb --print runs`},
		{"hist tick nosuch", `bpftape record: --print "hist tick nosuch": probe tick has no field "nosuch"; its fields: arg0`},
		{"hist nosuch arg0", `bpftape record: --print "hist nosuch arg0": no probe "nosuch"; the capture has: tick`},
	} {
		r := runBin(t, exec.Command(bin, "record", "-o", out, "--print", tt.print, "-c", "touch "+ran, "u:"+probes+":tick(arg0)"))
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("--print %q: exit %d, stderr %q; want %d, %q", tt.print, r.code, r.stderr, exitUsage, tt.want)
		}
		for _, f := range []string{out, ran} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("--print %q: %s exists", tt.print, f)
			}
		}
	}
	r := runBin(t, exec.Command(bin, "record", "--help"))
	for _, want := range []string{"--print 'VERB ARGS'", "--interval DURATION", "--print 'hist rd retval --label bytes'"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("record --help lacks %q", want)
		}
	}
}
