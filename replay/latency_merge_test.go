package replay

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestLatencyMerged pairs calls whose batches are paired apart and merged
// (the pass without a filter) and wants what pairing the rows in order
// finds: one row at a time, and a stretch at a time on one goroutine (a
// filter that keeps every row). The capture's batches are 3 rows, so that
// nearly every call spans batches; threads interleave, nest, return
// without entry and enter without return, a loss record falls between
// them, times go back, and one thread nests past MaxDepth in some
// batches and not in others (where a batch alone could not tell).
func TestLatencyMerged(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var rows []row
	ts := int64(2000)
	add := func(probe uint16, tid uint32) {
		ts += 1 + rng.Int63n(5000)
		rows = append(rows, row{probe: probe, tid: tid, t: ts, ints: []uint64{1}})
	}
	for i := range 20000 {
		add(uint16(rng.Intn(2)), uint32(1+rng.Intn(4)))
		if i%5000 == 17 {
			ts++
			rows = append(rows, row{probe: 0, t: ts, lost: 3})
		}
	}
	// Deep: MaxDepth-2 entries, then runs of 3 entries and 2 returns
	// (past MaxDepth in the middle of a batch), then returns.
	for range MaxDepth - 2 {
		add(0, 9)
	}
	for range 5 {
		add(0, 9)
		add(0, 9)
		add(0, 9)
		add(1, 9)
		add(1, 9)
	}
	for range MaxDepth + 10 {
		add(1, 9)
	}
	for range 1000 {
		add(uint16(rng.Intn(2)), uint32(1+rng.Intn(4)))
	}
	// Times 2 s back, within a batch and across one: the pass's check of
	// the times must find them alike.
	for k := range 4 {
		rows = append(rows, row{probe: 0, tid: 3, t: ts - 2e9 + int64(k)})
		add(1, 3)
		add(0, 2)
		add(1, 2) // 4 rows a time: the times back fall anywhere in a batch

	}
	probes := []format.Probe{
		{Name: "f", Fields: []format.Field{{Name: "arg0", Type: format.Int64}}},
		{Name: "f_ret", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	}
	c := writeCapture(t, probes, rows)
	run := func(how string, o LatencyOptions) (string, *LatencyResult) {
		c.perRow = how == "rows"
		c.r.ReadAhead = 3
		if how == "merged, one goroutine" {
			c.r.ReadAhead = 0
		}
		o.Entry, o.Return = "f", "f_ret"
		var out bytes.Buffer
		res, p, err := Latency(c, o, &out)
		if err != nil {
			t.Fatal(err)
		}
		if p.spans != !c.perRow || p.Times.Backward == 0 {
			t.Errorf("%s: spans %v, times %+v (want some going back)", how, p.spans, p.Times)
		}
		p.Notes(&out)
		fmt.Fprintf(&out, "events %d losses %+v\n", p.Events, p.Losses)
		return out.String(), res
	}
	// Options that keep one histogram (by interval or key, or in
	// bpftrace's style, the calls are counted in order).
	for _, o := range []LatencyOptions{{}, {Unit: "us", JSON: true}, {Unit: "ms"}} {
		want, wres := run("rows", o)
		if wres.Overflows == 0 || wres.UnmatchedReturns == 0 || wres.UnmatchedEntries == 0 || wres.Calls < 5000 {
			t.Fatalf("the capture does not test what it should: %+v", *wres)
		}
		filtered := o
		filtered.Rows.PIDs = []uint32{7}
		gotF, _ := run("stretches", filtered)
		if gotF != want {
			t.Errorf("%+v: a stretch at a time on one goroutine:\n%s\nrow by row:\n%s", o, gotF, want)
		}
		for _, how := range []string{"merged", "merged, one goroutine"} {
			got, res := run(how, o)
			if got != want || res.Calls != wres.Calls || res.Overflows != wres.Overflows ||
				res.UnmatchedReturns != wres.UnmatchedReturns || res.UnmatchedEntries != wres.UnmatchedEntries ||
				res.Hist.Slots() != wres.Hist.Slots() || res.Stats.Sum().Cmp(wres.Stats.Sum()) != 0 {
				t.Errorf("%+v %s:\n%s%+v\nrow by row:\n%s%+v", o, how, got, *res, want, *wres)
			}
		}
	}
}

// TestLatencyStackRoom: pairing a thread's long run of rows leaves the
// thread's stack with room for about the calls it has open, not for a
// push at every row of the run: many threads with long runs of calls one
// deep would otherwise hold a run's worth of room each.
func TestLatencyStackRoom(t *testing.T) {
	const threads, run = 64, 1000
	n := threads * run
	b := &format.Batch{Len: n, Time: make([]int64, n), TID: make([]uint32, n), Probe: make([]uint16, n)}
	for i := range n {
		b.Time[i] = int64(1000 + i)
		b.TID[i] = uint32(1 + i/run)
		b.Probe[i] = uint16(i % 2) // a start, then its end
	}
	var st openCalls
	var scratch []int64
	pr := callPairer{start: 0, end: 1, stacks: &st, scratch: &scratch}
	calls := 0
	pr.span(b, 0, n, func(durs []int64, _ []int32) { calls += len(durs) })
	if calls != n/2 || pr.unmatched != 0 {
		t.Fatalf("%d calls, %d unmatched; want %d, 0", calls, pr.unmatched, n/2)
	}
	for k, s := range st.m {
		if len(*s) != 0 || cap(*s) > 8 {
			t.Errorf("thread %d: stack of %d calls with room for %d", k, len(*s), cap(*s))
		}
	}
	if len(st.m) != threads {
		t.Errorf("%d threads' stacks, want %d", len(st.m), threads)
	}
}

// TestPairingAddSpan: Pairing.AddSpan pairs a stretch as Add pairs each of
// its rows with its time as the token (the heat maps' latency layers go
// by stretches through it): the same calls at the same end rows, the same
// ends without a start and starts past MaxDepth, in spans of every size,
// on threads that interleave, nest, overflow and end what they never
// started; and the same starts left open.
func TestPairingAddSpan(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	const n = 40000
	b := &format.Batch{Len: n, Time: make([]int64, n), TID: make([]uint32, n), Probe: make([]uint16, n)}
	tid := uint32(1)
	for i := range n {
		b.Time[i] = int64(1000 + 3*i + r.Intn(3))
		if r.Intn(20) == 0 {
			tid = uint32(1 + r.Intn(5))
		}
		b.TID[i] = tid
		switch {
		case i >= 10000 && i < 10000+MaxDepth+200:
			b.TID[i], b.Probe[i] = 99, 0 // a thread that nests past MaxDepth
		default:
			b.Probe[i] = uint16(r.Intn(3)) // a start, an end or another probe
		}
	}
	type call struct {
		end int
		dur int64
	}
	var want []call
	var wantUnmatched, wantOverflows uint64
	row := &Pairing{start: 0, end: 1, threads: &threadKeys{}}
	for i := range n {
		switch step, prev := row.Add(b, i, b.Time[i]); step {
		case PairEnded:
			want = append(want, call{i, b.Time[i] - prev})
		case PairUnmatched:
			wantUnmatched++
		case PairOverflow:
			wantOverflows++
		}
	}
	if wantOverflows == 0 || wantUnmatched == 0 || len(want) == 0 {
		t.Fatalf("the rows pair %d calls, %d unmatched ends, %d overflows: want some of each", len(want), wantUnmatched, wantOverflows)
	}
	for _, size := range []int{1, 7, PickMax - 1, PickMax + 1, 5000, n} {
		span := &Pairing{start: 0, end: 1, threads: &threadKeys{}}
		var got []call
		var unmatched, overflows uint64
		for lo := 0; lo < n; lo += size {
			hi := min(n, lo+size)
			u, o, ok := span.AddSpan(b, lo, hi, func(durs []int64, ends []int32) {
				for j, e := range ends {
					got = append(got, call{lo + int(e), durs[j]})
				}
			})
			if !ok {
				t.Fatal("AddSpan refused a pairing by thread")
			}
			unmatched, overflows = unmatched+u, overflows+o
		}
		if !reflect.DeepEqual(got, want) || unmatched != wantUnmatched || overflows != wantOverflows {
			t.Errorf("spans of %d: %d calls, %d unmatched, %d overflows; want %d, %d, %d (calls equal: %v)",
				size, len(got), unmatched, overflows, len(want), wantUnmatched, wantOverflows, reflect.DeepEqual(got, want))
		}
		var open, wantOpen []int64
		span.Open(func(tok int64) { open = append(open, tok) })
		row.Open(func(tok int64) { wantOpen = append(wantOpen, tok) })
		slices.Sort(open)
		slices.Sort(wantOpen)
		if !slices.Equal(open, wantOpen) {
			t.Errorf("spans of %d: %d starts left open, want %d", size, len(open), len(wantOpen))
		}
	}
	keyed := &Pairing{start: 0, end: 1, threads: &threadKeys{}, keys: &pairKeys{}}
	if _, _, ok := keyed.AddSpan(b, 0, n, func([]int64, []int32) {}); ok {
		t.Error("AddSpan took a keyed pairing")
	}
}
