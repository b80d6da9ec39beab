package replay

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestRequestsMerged sums requests whose batches are summed apart and
// merged (the pass without a filter) and wants what summing the rows in
// order finds: one row at a time, and a stretch at a time on one
// goroutine (a filter that keeps every row). The batches are 3 rows, so
// that most requests span batches; threads interleave, end without items,
// and leave requests open at the end, and a loss record falls between;
// the ends' values are also cast to u8.
func TestRequestsMerged(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var rows []row
	ts := int64(2000)
	for i := range 20000 {
		ts += 1 + rng.Int63n(5000)
		probe := uint16(0)
		if rng.Intn(4) == 0 {
			probe = 1 // an end for every 3 items
		}
		v := uint64(rng.Intn(3000))
		if probe == 1 {
			v = uint64(int32(rng.Intn(200) - 100))
		}
		rows = append(rows, row{probe: probe, tid: uint32(1 + rng.Intn(5)), t: ts, ints: []uint64{v}})
		if i%7000 == 11 {
			ts++
			rows = append(rows, row{probe: 0, t: ts, lost: 2})
		}
	}
	// Batches of 3 rows with a loss record, and of 7 rows without, where
	// a thread's items after its last end in a batch are often several.
	var events []row
	for _, r := range rows {
		if r.lost == 0 {
			events = append(events, r)
		}
	}
	m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(0, 0), Probes: reqProbes}
	for _, c := range []*Capture{writeCapture(t, reqProbes, rows), writeCaptureMeta(t, m, events, 0)} {
		checkRequestsMerged(t, c)
	}
}

// checkRequestsMerged runs Requests on c merged, a stretch at a time and
// row by row, and wants the same output and counts.
func checkRequestsMerged(t *testing.T, c *Capture) {
	t.Helper()
	run := func(how string, o RequestsOptions) (string, *RequestsResult) {
		c.perRow = how == "rows"
		c.r.ReadAhead = 3
		if how == "merged, one goroutine" {
			c.r.ReadAhead = 0
		}
		o.ItemProbe, o.ItemField, o.EndProbe, o.EndField = "item", "len", "end", "retval"
		var out bytes.Buffer
		res, p, err := Requests(c, o, &out)
		if err != nil {
			t.Fatal(err)
		}
		if p.spans != !c.perRow {
			t.Errorf("%s: spans %v", how, p.spans)
		}
		p.Notes(&out)
		fmt.Fprintf(&out, "events %d losses %+v\n", p.Events, p.Losses)
		return out.String(), res
	}
	for _, o := range []RequestsOptions{{}, {Global: true, JSON: true}, {EndCast: Cast{size: 8}, Stats: true}} {
		want, wres := run("rows", o)
		if wres.EndsWithoutItems == 0 || wres.Incomplete == 0 || wres.Requests < 1000 {
			t.Fatalf("the capture does not test what it should: %+v", *wres)
		}
		// The statistics are kept with Stats or JSON only.
		if kept := wres.EndStats.Count() + wres.TotalStats.Count(); kept != 2*wres.Requests && (o.Stats || o.JSON) || kept != 0 && !o.Stats && !o.JSON {
			t.Errorf("%+v: statistics of %d values for %d requests", o, kept, wres.Requests)
		}
		filtered := o
		filtered.Rows.PIDs = []uint32{7}
		if got, _ := run("stretches", filtered); got != want {
			t.Errorf("%+v: a stretch at a time on one goroutine:\n%s\nrow by row:\n%s", o, got, want)
		}
		for _, how := range []string{"merged", "merged, one goroutine"} {
			got, res := run(how, o)
			if got != want || res.Requests != wres.Requests || res.EndsWithoutItems != wres.EndsWithoutItems ||
				res.Incomplete != wres.Incomplete || res.IncompleteItems != wres.IncompleteItems ||
				res.Total.Slots() != wres.Total.Slots() || res.TotalStats.Sum().Cmp(wres.TotalStats.Sum()) != 0 ||
				res.EndStats.Sum().Cmp(wres.EndStats.Sum()) != 0 || res.EndStats.Percentile(50) != wres.EndStats.Percentile(50) {
				t.Errorf("%+v %s:\n%s%+v\nrow by row:\n%s%+v", o, how, got, *res, want, *wres)
			}
		}
	}
}
