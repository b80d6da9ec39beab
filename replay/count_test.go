package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
)

// TestCount checks funccount's table: ascending counts, a probe that
// recorded nothing listed as 0 with Zeros only, patterns, --by and the
// loss note.
func TestCount(t *testing.T) {
	probes := []format.Probe{{Name: "vfs_read"}, {Name: "vfs_write"}, {Name: "vfs_open"}, {Name: "other"}}
	var rows []row
	for i := range 5 {
		rows = append(rows, row{probe: 0, tid: 1, t: int64(1000 + i)})
	}
	rows = append(rows, row{probe: 1, tid: 2, t: 2000, comm: "w"}, row{probe: 1, tid: 1, t: 2001},
		row{probe: 3, tid: 1, t: 3000}, row{probe: 1, tid: 1, lost: 4, t: 4000})
	c := writeCapture(t, probes, rows)

	var out bytes.Buffer
	got, _, err := Count(c, CountOptions{Probes: []string{"vfs_*"}, Zeros: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []CountRow{{Probe: "vfs_open"}, {Probe: "vfs_write", Count: 2}, {Probe: "vfs_read", Count: 5}}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	text := out.String()
	for _, w := range []string{"FUNC             COUNT\n", "vfs_open             0\nvfs_write            2\nvfs_read             5\n", "4 events of these probes were lost"} {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}

	out.Reset()
	if got, _, err = Count(c, CountOptions{Probes: []string{"vfs_*"}}, &out); err != nil || len(got) != 2 || strings.Contains(out.String(), "vfs_open") {
		t.Errorf("without Zeros: %+v, %v:\n%s", got, err, out.String())
	}
	out.Reset()
	got, _, err = Count(c, CountOptions{Probes: []string{"vfs_write"}, By: "comm", JSON: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Counts []CountRow `json:"counts"`
		Losses Losses     `json:"losses"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Counts) != 2 || j.Counts[0] != (CountRow{Probe: "vfs_write", Key: "app", Count: 1}) || j.Counts[1] != (CountRow{Probe: "vfs_write", Key: "w", Count: 1}) || j.Losses.Total != 4 {
		t.Errorf("JSON %s", out.String())
	}

	if _, _, err := Count(c, CountOptions{Probes: []string{"tcp_*"}}, &out); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), `"vfs_read"`) {
		t.Errorf("a pattern matching nothing: %v", err)
	}
	if _, _, err := Count(c, CountOptions{Probes: []string{"["}}, &out); err == nil {
		t.Error("a bad pattern was taken")
	}
}

// TestCountByCommViews checks count --by comm, which finds a comm by its
// string view in a small cache, against a plain count: more comms than
// the cache has slots, long comms that share their first bytes (their
// views differ only in where the string lies), short ones, a comm of
// exactly 12 and 13 bytes, loss records, and batches of 3 rows, with and
// without a row filter.
func TestCountByCommViews(t *testing.T) {
	probes := []format.Probe{{Name: "a"}, {Name: "b"}}
	var comms []string
	for i := range 300 {
		switch i % 4 {
		case 0:
			comms = append(comms, fmt.Sprintf("kworker/u8:%d", i)) // 12 to 14 bytes
		case 1:
			comms = append(comms, fmt.Sprintf("kworker/u8:%d-events", i))
		case 2:
			comms = append(comms, fmt.Sprintf("c%d", i))
		default:
			comms = append(comms, strings.Repeat("x", 12+i%2)+fmt.Sprint(i%7))
		}
	}
	rng := rand.New(rand.NewSource(5))
	var rows []row
	want := map[CountRow]uint64{}
	for i := range 20000 {
		r := row{probe: uint16(rng.Intn(2)), tid: uint32(1 + rng.Intn(9)), t: int64(1000 + i)}
		// Runs of one comm, as threads run, and jumps between many.
		r.comm = comms[(i/(1+rng.Intn(5)))%len(comms)]
		if rng.Intn(50) == 0 {
			r.comm = comms[rng.Intn(len(comms))]
		}
		if rng.Intn(200) == 0 {
			r.lost = 1
		} else {
			want[CountRow{Probe: probes[r.probe].Name, Key: r.comm}]++
		}
		rows = append(rows, r)
	}
	c := writeCapture(t, probes, rows)
	for _, o := range []CountOptions{{By: "comm"}, {By: "comm", Rows: RowFilter{TIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}}}} {
		got, _, err := Count(c, o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%+v: %d rows, want %d", o.Rows, len(got), len(want))
		}
		for _, r := range got {
			n := r.Count
			r.Count = 0
			if want[r] != n {
				t.Errorf("%+v: %s %q counted %d, want %d", o.Rows, r.Probe, r.Key, n, want[r])
			}
		}
	}
}

// TestCountByCommBlocks counts by comm a capture whose threads run for
// hundreds of events of one comm, across batches (commSpan's blocks of
// one view, blockProbes) as well as in short runs, with comms short
// and long (a long one's view differs from batch to batch), three
// probes interleaved, one left out by a pattern; and with more probes
// than blocks are counted for.
func TestCountByCommBlocks(t *testing.T) {
	// Two long comms of one length and prefix: at one offset of their
	// batches' data, their views are equal.
	comms := []string{"app", "kworker/u8:3-events", "kworker/u8:4-events", "db-writer-thread", "x"}
	for _, nprobes := range []int{3, maxBlockProbes + 1} {
		probes := make([]format.Probe, nprobes)
		for i := range probes {
			probes[i] = format.Probe{Name: fmt.Sprintf("p%d", i)}
		}
		m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(0, 0), Probes: probes}
		rng := rand.New(rand.NewSource(int64(nprobes)))
		var rows []row
		want := map[CountRow]uint64{}
		for len(rows) < 30000 {
			comm, n := comms[rng.Intn(len(comms))], 1+rng.Intn(5)
			if rng.Intn(3) > 0 {
				n = 50 + rng.Intn(700)
			}
			for range n {
				p := uint16(rng.Intn(3))
				if rng.Intn(40) == 0 {
					p = uint16(rng.Intn(nprobes))
				}
				rows = append(rows, row{probe: p, tid: 1, t: int64(1000 + len(rows)), comm: comm})
				if p != 1 {
					want[CountRow{Probe: probes[p].Name, Key: comm}]++
				}
			}
		}
		c := openCapture(t, writeRows(t, m, rows, 1000, 0))
		var pats []string
		for i := range probes {
			if i != 1 {
				pats = append(pats, probes[i].Name)
			}
		}
		got, _, err := Count(c, CountOptions{By: "comm", Probes: pats}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%d probes: %d rows, want %d", nprobes, len(got), len(want))
		}
		for _, r := range got {
			n := r.Count
			r.Count = 0
			if want[r] != n {
				t.Errorf("%d probes: %s %q counted %d, want %d", nprobes, r.Probe, r.Key, n, want[r])
			}
		}
	}
}
