//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// flightKey is an event of testdata/flight/slow.c as both recorders see
// it: f(i) is ("f", i), its return ("f:return", i).
type flightKey struct {
	probe string
	i     int64
}

// flightCapture is what a test reads of a capture of slow.c's probes.
type flightCapture struct {
	meta   *format.Meta
	events map[flightKey]int64 // time of each event
	first  int64               // time of f(0), if recorded
}

// readFlight reads the f and f:return events of a capture.
func readFlight(t *testing.T, path string) *flightCapture {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer r.Close()
	if r.Recovered {
		t.Fatalf("%s has no footer", path)
	}
	c := &flightCapture{meta: r.Meta, events: map[flightKey]int64{}, first: -1}
	cols := make([]int, len(r.Meta.Probes))
	for i, p := range r.Meta.Probes {
		cols[i] = r.Column(p.Fields[0].Column)
	}
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if _, ok := b.Lost(i); ok {
				t.Fatalf("%s: events lost", path)
			}
			p := b.Probe[i]
			k := flightKey{r.Meta.Probes[p].Name, b.Col(cols[p]).Int(i)}
			c.events[k] = b.Time[i]
			if k == (flightKey{"f", 0}) {
				c.first = b.Time[i]
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFlightTriggerLatency: a workload runs 20 s and makes one 200-ms call
// at 12 s. A flight recorder of the last 3 s with --trigger-latency 'f
// f:return > 50ms' --after 1s, attached to it alongside an ordinary
// recording of the whole run, writes exactly one snapshot: its window
// ends 1 s after the slow call returned and reaches 3 s back (give or
// take one batch, which a batch's age of at most 1 s bounds), it holds
// the slow pair, and every event of the ordinary recording inside its
// window and no event outside it.
func TestFlightTriggerLatency(t *testing.T) {
	bin, _ := bpftapeBin(t)
	slow := testutil.BuildC(t, "../../testdata/flight/slow.c", "slow")
	dir := t.TempDir()
	full, aReady := filepath.Join(dir, "full.arrow"), filepath.Join(dir, "a.ready")
	probes := []string{"u:" + slow + ":f(arg0)", "ur:" + slow + ":f(retval)"}
	a := exec.Command(bin, append([]string{"record", "-o", full, "--ready-file", aReady, "-c", slow + " 20 12"}, probes...)...)
	aOut := &strings.Builder{}
	a.Stdout = aOut
	aDone := make(chan result, 1)
	go func() { aDone <- runBin(t, a) }()
	pid := readyTarget(t, waitFile(t, aReady, 20*time.Second))

	fl := filepath.Join(dir, "fl.arrow")
	b := runBin(t, exec.Command(bin, append([]string{"record", "--flight", "3s", "--trigger-latency", "f f:return > 50ms", "--after", "1s",
		"-o", fl, "-p", strconv.Itoa(pid)}, probes...)...))
	ra := <-aDone
	if ra.code != 0 || b.code != 0 {
		t.Fatalf("exit %d (ordinary), %d (flight)", ra.code, b.code)
	}
	m := regexp.MustCompile(`slow call (\d+) at`).FindStringSubmatch(aOut.String())
	if m == nil {
		t.Fatalf("the workload printed %q", aOut.String())
	}
	slowI := testutil.Atoi(t, m[1])

	snaps, _ := filepath.Glob(filepath.Join(dir, "fl*"))
	if len(snaps) != 1 || filepath.Base(snaps[0]) != "fl-0001.arrow" {
		t.Fatalf("flight recorder wrote %q, want fl-0001.arrow alone", snaps)
	}
	if !strings.Contains(b.stderr, "snapshot "+snaps[0]+": latency f f:return > 50ms") {
		t.Errorf("the recorder did not name its snapshot")
	}
	s, o := readFlight(t, snaps[0]), readFlight(t, full)
	win := s.meta.Window
	if win == nil || s.meta.Extra[format.ExtraFlightTrigger] != "latency f f:return > 50ms" {
		t.Fatalf("snapshot window %+v, extra %v", win, s.meta.Extra)
	}
	ret, ok := s.events[flightKey{"f:return", slowI}]
	if _, entry := s.events[flightKey{"f", slowI}]; !ok || !entry {
		t.Fatalf("the slow call %d is not in the snapshot", slowI)
	}
	trig := testutil.Atoi(t, s.meta.Extra[format.ExtraFlightTime])
	if trig != ret {
		t.Errorf("trigger at %d, the slow call returned at %d", trig, ret)
	}
	sec := func(ns int64) float64 { return float64(ns-o.first) / 1e9 }
	t.Logf("slow call %d returned at %.3fs; snapshot window [%.3fs, %.3fs], %d events", slowI, sec(ret), sec(win.Start), sec(win.End), len(s.events))
	const batch = int64(1100 * time.Millisecond) // a batch's most age, and some
	// It ends at its due time, not at the events the recorder had read
	// when it saw that time pass (up to 137 ms later before the batch was
	// cut there); a millisecond for events read out of order.
	if end := ret + int64(time.Second); win.End < end || win.End > end+int64(time.Millisecond) {
		t.Errorf("window ends at %.3fs, want 1 s after the trigger, %.3fs", sec(win.End), sec(end))
	}
	if start := win.End - 3e9; win.Start > start || win.Start < start-batch {
		t.Errorf("window starts at %.3fs, want 3 s before its end, %.3fs, and within a batch", sec(win.Start), sec(start))
	}
	// Every event of the window is there, and none outside it. The two
	// recorders' programs run one after the other on each call: their
	// times of one event differ by microseconds.
	const skew = int64(time.Millisecond)
	missing, inside := 0, 0
	for k, tm := range o.events {
		if tm > win.Start+skew && tm < win.End-skew {
			inside++
			if _, ok := s.events[k]; !ok {
				missing++
			}
		}
	}
	outside := 0
	for _, tm := range s.events {
		if tm < win.Start || tm > win.End {
			outside++
		}
	}
	// At least 3 s of calls less the slow one's 200 ms, at a call a
	// millisecond that usleep stretches to 1.2 here: over 2 × 2,000
	// events (the window was 3.114 s and held 4,892 in one run).
	if missing > 0 || outside > 0 || inside < 2*2000 {
		t.Errorf("snapshot of %d events: %d of the window's %d events missing, %d outside it", len(s.events), missing, inside, outside)
	}
	// The snapshot is analysed alone: latency finds the slow call.
	r := runBin(t, exec.Command(bin, "latency", snaps[0], "f", "f:return"))
	if mx := regexp.MustCompile(`max (\d+)`).FindStringSubmatch(r.stdout); r.code != 0 || mx == nil || testutil.Atoi(t, mx[1]) < 200e6 {
		t.Errorf("latency on the snapshot: exit %d, %q", r.code, r.stdout)
	}
	info := runBin(t, exec.Command(bin, "info", snaps[0]))
	if !strings.Contains(info.stdout, "snapshot:     taken on latency f f:return > 50ms at +") {
		t.Errorf("info does not show the trigger:\n%s", info.stdout)
	}
}

// TestFlightSignal: a flight recorder takes a snapshot on 'bpftape
// snapshot --ready-file' and on SIGUSR1, each of the last --flight with
// no event missing, and no other at the end; 'bpftape snapshot' refuses a
// process that is not a flight recorder, and a recording that is not one
// goes on through SIGUSR1.
func TestFlightSignal(t *testing.T) {
	bin, _ := bpftapeBin(t)
	slow := testutil.BuildC(t, "../../testdata/flight/slow.c", "slow")
	dir := t.TempDir()
	fl, ready, errPath := filepath.Join(dir, "fl.arrow"), filepath.Join(dir, "ready"), filepath.Join(dir, "err")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	rec := exec.Command(bin, "record", "--flight", "2s", "--ready-file", ready, "-o", fl, "-c", slow+" 7 100", "f=u:"+slow+":f(arg0)")
	rec.Stderr = errFile
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	waitFile(t, ready, 20*time.Second)
	time.Sleep(2500 * time.Millisecond)
	if r := runBin(t, exec.Command(bin, "snapshot", "--ready-file", ready)); r.code != 0 {
		t.Fatalf("snapshot --ready-file: exit %d", r.code)
	}
	waitFile(t, filepath.Join(dir, "fl-0001.arrow"), 10*time.Second)
	time.Sleep(time.Second)
	rec.Process.Signal(syscall.SIGUSR1)
	waitFile(t, filepath.Join(dir, "fl-0002.arrow"), 10*time.Second)
	if r := runBin(t, exec.Command(bin, "snapshot", strconv.Itoa(os.Getpid()))); r.code != 1 || !strings.Contains(r.stderr, "not a flight recorder") {
		t.Errorf("snapshot of the test's own pid: exit %d, want 1", r.code)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("recorder: %v", err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "fl*"))
	sort.Strings(snaps)
	if len(snaps) != 2 {
		t.Fatalf("flight recorder wrote %q, want 2 snapshots", snaps)
	}
	for _, p := range snaps {
		s := readFlight(t, p)
		win := s.meta.Window
		var is []int64
		for k := range s.events {
			is = append(is, k.i)
		}
		sort.Slice(is, func(a, b int) bool { return is[a] < is[b] })
		t.Logf("%s: %d events, f(%d) to f(%d), window %.3fs", filepath.Base(p), len(is), is[0], is[len(is)-1], float64(win.End-win.Start)/1e9)
		if is[len(is)-1]-is[0]+1 != int64(len(is)) {
			t.Errorf("%s: events missing between f(%d) and f(%d)", p, is[0], is[len(is)-1])
		}
		if d := win.End - win.Start; d < 2e9 || d > 3.2e9 || s.meta.Extra[format.ExtraFlightTrigger] != "signal" {
			t.Errorf("%s: window of %.3fs, trigger %q", p, float64(d)/1e9, s.meta.Extra[format.ExtraFlightTrigger])
		}
	}

	// An ordinary recording says it ignores SIGUSR1, and goes on.
	plain := filepath.Join(dir, "plain.arrow")
	ready2 := filepath.Join(dir, "ready2")
	var r result
	done := make(chan struct{})
	go func() {
		r = runBin(t, exec.Command(bin, "record", "-o", plain, "--ready-file", ready2, "-c", slow+" 2 100", "f=u:"+slow+":f(arg0)"))
		close(done)
	}()
	pid := testutil.Atoi(t, strings.TrimPrefix(strings.Split(waitFile(t, ready2, 20*time.Second), "\n")[0], "pid="))
	syscall.Kill(int(pid), syscall.SIGUSR1)
	if r := runBin(t, exec.Command(bin, "snapshot", strconv.Itoa(int(pid)))); r.code != 1 {
		t.Errorf("snapshot of an ordinary recording: exit %d, want 1", r.code)
	}
	<-done
	if r.code != 0 || !strings.Contains(r.stderr, "SIGUSR1 ignored") || !strings.Contains(r.stderr, "stopped: command exited") {
		t.Errorf("ordinary recording under SIGUSR1: exit %d", r.code)
	}
}

// TestFlightTriggerProbe: --trigger PROBE with --trigger-holdoff takes a
// snapshot at the first event of a filtered probe and at the next one a
// holdoff later, and --max-snapshots 2 then ends the recording; bad
// flight flags are usage errors.
func TestFlightTriggerProbe(t *testing.T) {
	bin, _ := bpftapeBin(t)
	slow := testutil.BuildC(t, "../../testdata/flight/slow.c", "slow")
	dir := t.TempDir()
	fl := filepath.Join(dir, "fl.arrow")
	r := runBin(t, exec.Command(bin, "record", "--flight", "1s", "--trigger", "big", "--trigger-holdoff", "1s", "--max-snapshots", "2",
		"-o", fl, "-c", slow+" 30 100", "f=u:"+slow+":f(arg0)", "big=u:"+slow+":f(arg0)/arg0 >= 2000/"))
	if r.code != 0 || !strings.Contains(r.stderr, "stopped: max snapshots") {
		t.Fatalf("exit %d, want 0 and 'stopped: max snapshots'", r.code)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "fl*"))
	sort.Strings(snaps)
	if len(snaps) != 2 {
		t.Fatalf("wrote %q, want 2 snapshots", snaps)
	}
	var trig []int64
	for _, p := range snaps {
		s := readFlight(t, p)
		trig = append(trig, testutil.Atoi(t, s.meta.Extra[format.ExtraFlightTime]))
		if s.meta.Extra[format.ExtraFlightTrigger] != "probe big" {
			t.Errorf("%s: trigger %q", p, s.meta.Extra[format.ExtraFlightTrigger])
		}
	}
	s1 := readFlight(t, snaps[0])
	if tm, ok := s1.events[flightKey{"big", 2000}]; !ok || tm != trig[0] {
		t.Errorf("the first snapshot's trigger is not big(2000)")
	}
	if d := trig[1] - trig[0]; d < 1e9 || d > 1.5e9 {
		t.Errorf("triggers %.3fs apart, want the holdoff, 1s", float64(d)/1e9)
	}
	// The events big's filter rejected in a snapshot's window are its
	// own: f's events below 2000 in it, to the 100 ms the counts are read
	// at (some 1,000 calls here).
	for _, p := range snaps {
		sn := readFlight(t, p)
		below := 0
		for k := range sn.events {
			if k.probe == "f" && k.i < 2000 {
				below++
			}
		}
		_, big := sn.meta.Probe("big")
		t.Logf("%s: big filtered %d, f below 2000: %d", filepath.Base(p), big.Filtered, below)
		if d := int64(big.Filtered) - int64(below); d < -1500 || d > 1500 {
			t.Errorf("%s: filtered count %d, want about %d", p, big.Filtered, below)
		}
	}

	for _, bad := range [][]string{
		{"--trigger", "f"},
		{"--flight", "1s", "--trigger", "nosuch"},
		{"--flight", "1s", "--max-size", "1M"},
		{"--flight", "1s", "--trigger-latency", "f f:return 10ms"},
		{"--flight", "1s", "--after", "1s"},
		{"--flight", "-1s"},
	} {
		args := append(append([]string{"record", "-o", filepath.Join(dir, "bad.arrow")}, bad...), "-c", slow+" 1 0", "f=u:"+slow+":f(arg0)")
		r := runBin(t, exec.Command(bin, args...))
		if lines := strings.Count(strings.TrimSpace(r.stderr), "\n"); r.code != 2 || lines > 0 {
			t.Errorf("%v: exit %d, %d lines, want 2 and one line", bad, r.code, lines+1)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "bad*")); len(left) > 0 {
		t.Errorf("a refused recording left %q", left)
	}
}
