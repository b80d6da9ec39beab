//go:build linux && amd64

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/replay"
)

// bccHist is a histogram in BCC's print_json_hist shape, with the key of
// a keyed one.
type bccHist struct {
	Data []struct {
		Start uint64 `json:"interval-start"`
		Count uint64 `json:"count"`
	} `json:"data"`
	Dev string `json:"dev"`
}

func (h *bccHist) add(sum map[uint64]uint64) (n uint64) {
	for _, d := range h.Data {
		sum[d.Start] += d.Count
		n += d.Count
	}
	return n
}

type intervalDoc struct {
	StartOffset int64             `json:"start_offset_ns"`
	EndOffset   int64             `json:"end_offset_ns"`
	Count       uint64            `json:"count"`
	Hists       []json.RawMessage `json:"hists"`
}

type latencyDoc struct {
	Calls            uint64            `json:"calls"`
	UnmatchedReturns uint64            `json:"unmatched_returns"`
	UnmatchedEntries uint64            `json:"unmatched_entries"`
	Restarted        uint64            `json:"restarted"`
	Hist             bccHist           `json:"hist"`
	Hists            []json.RawMessage `json:"hists"`
	Intervals        []intervalDoc     `json:"intervals"`
}

// biolatencyBT is bpftrace's tracepoint biolatency as a one-liner, which
// also prints each pair: dev, sector, the issue's and the completion's
// nsecs (CLOCK_MONOTONIC) and the comm the completion interrupted.
const biolatencyBT = `tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
	$s = @start[args->dev, args->sector];
	@usecs = hist((nsecs - $s) / 1000);
	@n = count();
	printf("pair %u %llu %llu %llu %s\n", args->dev, args->sector, $s, nsecs, comm);
	delete(@start[args->dev, args->sector]);
}
END { clear(@start); }`

// btPair is a request bpftrace paired, its times on the boot clock.
type btPair struct {
	dev, sector int64
	start, end  int64
	comm        string
}

// bioKey is a request's dev and sector.
type bioKey struct{ dev, sector int64 }

// issueAt is an issue bpftape recorded, and when its completion came (0:
// none).
type issueAt struct {
	bioKey
	t, end int64
}

// pairModel pairs the capture's issues and completions by dev and sector
// the plain way, event by event, and returns what latency --key must
// count: pairs, completions without issue, and the issues that got no
// completion (open at the end, or replaced by a later issue of the same
// key, whose number it also returns).
func pairModel(t *testing.T, path string) (pairs []issueAt, orphans uint64, unpaired []issueAt, restarted uint64) {
	t.Helper()
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ref := func(probe, field string) replay.Ref {
		r, err := c.Resolve(probe, field)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	iDev, iSector, cDev, cSector := ref("issue", "dev"), ref("issue", "sector"), ref("complete", "dev"), ref("complete", "sector")
	open := map[bioKey]int64{}
	if _, err := c.Scan(nil, func(b *format.Batch, i int) {
		if d, ok := iDev.Int(b, i); ok {
			s, _ := iSector.Int(b, i)
			k := bioKey{d, s}
			if t0, ok := open[k]; ok {
				unpaired = append(unpaired, issueAt{k, t0, 0})
				restarted++
			}
			open[k] = b.Time[i]
			return
		}
		if d, ok := cDev.Int(b, i); ok {
			s, _ := cSector.Int(b, i)
			k := bioKey{d, s}
			if t0, ok := open[k]; ok {
				delete(open, k)
				pairs = append(pairs, issueAt{k, t0, b.Time[i]})
			} else {
				orphans++
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	for k, t0 := range open {
		unpaired = append(unpaired, issueAt{k, t0, 0})
	}
	return pairs, orphans, unpaired, restarted
}

// bootMinusMono is CLOCK_BOOTTIME - CLOCK_MONOTONIC: what converts
// bpftrace's nsecs to the capture's clock.
func bootMinusMono() int64 {
	var mono unix.Timespec
	b0 := boottime.Now()
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	b1 := boottime.Now()
	return (b0+b1)/2 - mono.Nano()
}

// TestSeed002Biolatency runs seed 002's biolatency (testdata/seed002/
// biolatency.sh) on this host's disk: the block tracepoints recorded while
// dd writes n blocks with O_DIRECT, each its own request, then paired by
// dev and sector, with bpftrace's one-liner running around the same
// window. latency --key counts what pairing the events one by one counts;
// every issue is paired, or counted as without completion or restarted;
// at least 95% of dd's blocks make pairs; bpftrace's pairs in the window
// are bpftape's, and those without completion. Other tests' I/O shares the
// disk: in one make test run 273 of 3,638 issues went unpaired, 222 of them
// a key issued again before any completion, and bpftrace paired exactly
// bpftape's 3,365 in the window, so the share of all issues paired says
// nothing of bpftape. The per-interval histograms, at 1 s
// and 100 ms, and the per-dev ones add up bucket by bucket to the whole.
func TestSeed002Biolatency(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	const n = 3000
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "seed002", "biolatency.sh"))
	if err != nil {
		t.Fatal(err)
	}
	bt := startBpftrace(t, biolatencyBT)
	cmd := exec.Command("sh", script, dir)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), fmt.Sprintf("N=%d", n))
	r := runBin(t, cmd)
	btOut := bt.stop(t)
	offset := bootMinusMono()
	if r.code != 0 {
		t.Fatalf("biolatency.sh: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("biolatency.sh:\n%s", r.stdout)
	for _, title := range []string{"biolatency", "biolatency -T 1", "biolatency -D", "bitesize -T 1, per disk"} {
		if !strings.Contains(r.stdout, "\n## "+title+"\n") {
			t.Errorf("no section %q", title)
		}
	}
	capPath := filepath.Join(dir, "bio.arrow")
	cli := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	var info struct {
		Meta     format.Meta       `json:"meta"`
		PerProbe map[string]uint64 `json:"events_per_probe"`
	}
	if err := json.Unmarshal([]byte(cli("info", "--json", capPath)), &info); err != nil {
		t.Fatal(err)
	}
	issues := info.PerProbe["issue"]
	w := info.Meta.Window
	if w == nil || w.End <= w.Start {
		t.Fatalf("the capture has no window: %+v", w)
	}

	key := []string{"latency", capPath, "issue", "complete", "--key", "dev,sector", "-u", "--json"}
	var whole latencyDoc
	if err := json.Unmarshal([]byte(cli(key...)), &whole); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d issues, %d completions in a %v window: %d pairs, %d completions without issue, %d issues without completion, %d restarted",
		issues, info.PerProbe["complete"], time.Duration(w.End-w.Start), whole.Calls, whole.UnmatchedReturns, whole.UnmatchedEntries, whole.Restarted)
	pairs, orphans, unpaired, restarted := pairModel(t, capPath)
	if whole.Calls != uint64(len(pairs)) || whole.UnmatchedReturns != orphans || whole.UnmatchedEntries+whole.Restarted != uint64(len(unpaired)) || whole.Restarted != restarted {
		t.Errorf("latency --key: %d pairs, %d completions without issue, %d issues without completion, %d restarted; pairing event by event: %d, %d, %d, %d",
			whole.Calls, whole.UnmatchedReturns, whole.UnmatchedEntries, whole.Restarted, len(pairs), orphans, uint64(len(unpaired))-restarted, restarted)
	}
	if issues < n || whole.Calls+whole.UnmatchedEntries+whole.Restarted != issues || whole.Calls < n*19/20 {
		t.Errorf("%d issues (dd wrote %d blocks): %d paired, %d without completion, %d restarted", issues, n, whole.Calls, whole.UnmatchedEntries, whole.Restarted)
	}

	// bpftrace ran from before the recorder was ready to after it
	// stopped, over the whole host as bpftape did.
	if btOut != "" {
		var bts []btPair
		for _, l := range strings.Split(btOut, "\n") {
			f := strings.Fields(l)
			if len(f) < 5 || f[0] != "pair" {
				continue
			}
			p := btPair{comm: strings.Join(f[5:], " ")}
			for i, v := range []*int64{&p.dev, &p.sector, &p.start, &p.end} {
				u, err := strconv.ParseUint(f[1+i], 10, 64)
				if err != nil {
					t.Fatalf("bpftrace: %q: %v", l, err)
				}
				*v = int64(u)
			}
			p.start += offset
			p.end += offset
			bts = append(bts, p)
		}
		// bpftrace's printf can lose a line (its perf buffer, under
		// load); @n counts every pair.
		m := regexp.MustCompile(`(?m)^@n: (\d+)$`).FindStringSubmatch(btOut)
		if m == nil {
			t.Fatalf("bpftrace printed no @n:\n%.2000s", btOut)
		}
		btLost := testutil.Atoi(t, m[1]) - int64(len(bts))
		if btLost < 0 || btLost > 10 {
			t.Fatalf("bpftrace printed %d pairs of its %s", len(bts), m[1])
		}
		byKey := map[bioKey][]btPair{}
		for _, p := range bts {
			byKey[bioKey{p.dev, p.sector}] = append(byKey[bioKey{p.dev, p.sector}], p)
		}
		// Which process each completion bpftape lacks interrupted, by
		// bpftrace's pair of the same key that started nearest the issue
		// (the two programs' clock reads of one event differ by 10 to 100
		// µs on this loaded host, so pairs do not match one to one).
		comms := map[string]int{}
		for _, u := range unpaired {
			var near *btPair
			for i, p := range byKey[u.bioKey] {
				if d := p.start - u.t; d > -1e6 && d < 1e6 && (near == nil || abs64(d) < abs64(near.start-u.t)) {
					near = &byKey[u.bioKey][i]
				}
			}
			if near == nil {
				comms["(not paired by bpftrace either)"]++
			} else {
				comms[near.comm]++
			}
		}
		// The pairs bpftrace made inside bpftape's window are bpftape's.
		// Exact matching is impossible: the window's edges are stamped by
		// a third clock read, and the two programs' reads differ. So the
		// counts compare within a few (bpftape's block tracepoints keep
		// the recorder's own events, a completion interrupting it
		// included: see bpf.SpecKeepSelf).
		in := 0
		for _, p := range bts {
			if p.start >= w.Start && p.end <= w.End {
				in++
			}
		}
		open := int(whole.UnmatchedEntries + whole.Restarted)
		t.Logf("bpftrace paired %d requests (%d not printed), %d inside bpftape's window; bpftape %d, with %d issues without completion, whose completions interrupted: %v",
			len(bts), btLost, in, whole.Calls, open, comms)
		if slack := 3 + int(btLost); int(whole.Calls) > in+slack || in > int(whole.Calls)+slack {
			t.Errorf("inside bpftape's window bpftrace paired %d requests; bpftape %d (and %d issues without completion)", in, whole.Calls, open)
		}
	}
	wholeSum := map[uint64]uint64{}
	if got := whole.Hist.add(wholeSum); got != whole.Calls {
		t.Errorf("the histogram counts %d, calls %d", got, whole.Calls)
	}
	// checkSums compares bucket sums with the whole histogram's.
	checkSums := func(what string, sum map[uint64]uint64, total uint64) {
		t.Helper()
		if total != whole.Calls {
			t.Errorf("%s: %d pairs, want %d", what, total, whole.Calls)
		}
		for b, c := range sum {
			if wholeSum[b] != c {
				t.Errorf("%s: bucket %d has %d, the whole histogram %d", what, b, c, wholeSum[b])
			}
		}
	}

	// --by dev: the disks' histograms add up to the whole.
	var byDev latencyDoc
	if err := json.Unmarshal([]byte(cli(append(key, "--by", "dev")...)), &byDev); err != nil {
		t.Fatal(err)
	}
	sum, total := map[uint64]uint64{}, uint64(0)
	for _, raw := range byDev.Hists {
		var h bccHist
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		c := h.add(sum)
		t.Logf("dev %s: %d requests", h.Dev, c)
		total += c
	}
	checkSums("--by dev", sum, total)

	// --interval: the intervals tile the window, and add up to the whole.
	for _, d := range []time.Duration{time.Second, 100 * time.Millisecond} {
		var iv latencyDoc
		if err := json.Unmarshal([]byte(cli(append(key, "--interval", d.String())...)), &iv); err != nil {
			t.Fatal(err)
		}
		// Intervals count from the capture's start (as --from does),
		// which the window follows within microseconds.
		span := w.End - info.Meta.StartBoot
		if want := (span + int64(d) - 1) / int64(d); int64(len(iv.Intervals)) != want {
			t.Errorf("--interval %v: %d intervals over the %v from the capture's start to the window's end, want %d", d, len(iv.Intervals), time.Duration(span), want)
		}
		sum, total := map[uint64]uint64{}, uint64(0)
		empty := 0
		for k, x := range iv.Intervals {
			if want := int64(k) * int64(d); x.StartOffset != want {
				t.Errorf("--interval %v: interval %d starts at %d, want %d", d, k, x.StartOffset, want)
			}
			var c uint64
			for _, raw := range x.Hists {
				var h bccHist
				if err := json.Unmarshal(raw, &h); err != nil {
					t.Fatal(err)
				}
				c += h.add(sum)
			}
			if c != x.Count {
				t.Errorf("--interval %v: interval %d says %d, its buckets %d", d, k, x.Count, c)
			}
			if c == 0 {
				empty++
			}
			total += c
		}
		t.Logf("--interval %v: %d intervals, %d of them empty", d, len(iv.Intervals), empty)
		checkSums("--interval "+d.String(), sum, total)
		// The text prints a time line per interval: BCC's %H:%M:%S for
		// whole seconds, with milliseconds that tell shorter ones apart.
		text := cli("latency", capPath, "issue", "complete", "--key", "dev,sector", "-u", "--interval", d.String())
		line := `(?m)^\d\d:\d\d:\d\d$`
		if d < time.Second {
			line = `(?m)^\d\d:\d\d:\d\d\.\d{3}$`
		}
		stamps := regexp.MustCompile(line).FindAllString(text, -1)
		if len(stamps) != len(iv.Intervals) {
			t.Errorf("--interval %v: %d time lines, %d intervals", d, len(stamps), len(iv.Intervals))
		}
		if d < time.Second && len(slices.Compact(slices.Clone(stamps))) != len(stamps) {
			t.Errorf("--interval %v: time lines %q, not one per interval", d, stamps)
		}
	}

	// hist --interval 1s --by dev of the request sizes adds up to hist.
	var sizes bccHist
	if err := json.Unmarshal([]byte(cli("hist", capPath, "issue", "nr_sector", "--json")), &sizes); err != nil {
		t.Fatal(err)
	}
	var ivs []intervalDoc
	if err := json.Unmarshal([]byte(cli("hist", capPath, "issue", "nr_sector", "--json", "--interval", "1s", "--by", "dev")), &ivs); err != nil {
		t.Fatal(err)
	}
	sizeSum, sizeTotal := map[uint64]uint64{}, uint64(0)
	for _, x := range ivs {
		for _, raw := range x.Hists {
			var h bccHist
			if err := json.Unmarshal(raw, &h); err != nil {
				t.Fatal(err)
			}
			sizeTotal += h.add(sizeSum)
		}
	}
	var sizeWhole uint64
	for _, d := range sizes.Data {
		sizeWhole += d.Count
		if sizeSum[d.Start] != d.Count {
			t.Errorf("hist --interval 1s --by dev: bucket %d has %d, hist %d", d.Start, sizeSum[d.Start], d.Count)
		}
	}
	if sizeTotal != issues || sizeWhole != issues {
		t.Errorf("hist: %d sizes per interval and dev, %d in all; %d issues", sizeTotal, sizeWhole, issues)
	}

}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// bpftraceRun is a bpftrace program running in the background.
type bpftraceRun struct {
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{} // closed once its stdout is read to its end
}

// startBpftrace starts bpftrace -e prog, whose BEGIN prints "ready" (bpftrace
// runs BEGIN once every probe is attached), and waits for that line. On a
// host without bpftrace it returns a run whose stop returns "".
func startBpftrace(t *testing.T, prog string) *bpftraceRun {
	t.Helper()
	r := &bpftraceRun{done: make(chan struct{})}
	path, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Log("no bpftrace: the comparison with it is left out")
		close(r.done)
		return r
	}
	r.cmd = exec.Command(path, "-e", `BEGIN { printf("ready\n"); } `+prog)
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	r.cmd.Stderr = &errb
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			if !seen && sc.Text() == "ready" {
				seen = true
				close(ready)
				continue
			}
			r.out.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			<-r.done
			r.cmd.Wait()
		}
	})
	select {
	case <-ready:
	case <-r.done:
		r.cmd.Wait()
		t.Fatalf("bpftrace exited before it was ready: %s%s", r.out.String(), errb.String())
	case <-time.After(60 * time.Second):
		t.Fatal("bpftrace was not ready in 60 s")
	}
	return r
}

// stop interrupts bpftrace, which then prints its maps, and returns what
// it printed.
func (r *bpftraceRun) stop(t *testing.T) string {
	t.Helper()
	if r.cmd == nil {
		return ""
	}
	r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd.Wait()
	return r.out.String()
}

// TestKeyIntervalFlags: the new flags' mistakes are one-line usage errors
// (exit 2) naming what is wrong.
func TestKeyIntervalFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	if err := formattest.WriteFile(path, 1000, nil, format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"latency", path, "rx", "rx_ret", "--key", "arg2"}, `--key arg2: ` + path + `: probe rx_ret has no field "arg2"; its fields: retval`},
		{[]string{"latency", path, "rx", "rx_ret", "--key", "arg2,,x"}, `--key "arg2,,x": an empty field name`},
		{[]string{"latency", path, "rx", "rx_ret", "--interval", "0s"}, "--interval 0s: must be more than 0"},
		{[]string{"latency", path, "rx", "rx_ret", "--by", "arg2"}, `--by: ` + path + `: probe rx_ret has no field "arg2"`},
		{[]string{"hist", path, "rx", "arg2", "--interval", "-1s"}, "--interval -1s: must be more than 0"},
		{[]string{"hist", path, "rx", "arg2", "--interval", "1ns"}, "spans more than 1000000 intervals"},
		{[]string{"requests", path, "rx", "arg2", "rx_ret", "retval", "--key", "retval"}, `--key retval: ` + path + `: probe rx has no field "retval"`},
		{[]string{"requests", path, "rx", "arg2", "rx_ret", "retval", "--key", ""}, `--key "": want FIELD[,FIELD...]`},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", tc.args[3:], code, out, errOut, tc.want)
		}
	}
}
