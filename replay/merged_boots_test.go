package replay

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// TestLatencyMergedOneHostName: a thread's call entered in one capture and
// a return of the same thread id in another, both recorded on machines
// named "(none)", pair only when the two were one boot of one machine.
func TestLatencyMergedOneHostName(t *testing.T) {
	probes := []format.Probe{{Name: "f", Kind: "uprobe"}, {Name: "f_ret", Kind: "uretprobe"}}
	wall := time.Unix(1700000000, 0)
	capture := func(bootID string, wall time.Time, boot int64, r replaytest.Row) string {
		m := &format.Meta{Host: "(none)", StartWall: wall, StartBoot: boot, Probes: probes,
			Extra: map[string]string{format.ExtraBootID: bootID}}
		r.PID, r.TID, r.Comm = 7, 7, []byte("app")
		return replaytest.Write(t, m, nil, 0, r)
	}
	// An entry 1 s into a, which never returns in a.
	a := capture("id-a", wall, 1e9, replaytest.Row{Event: format.Event{Probe: 0, Time: 2e9}})
	for _, tc := range []struct {
		name, bootID string
		calls        uint64
	}{
		{"another machine", "id-b", 0},
		{"a later part of a's boot", "id-a", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Started 0.5 s after a on the wall clock, 50 s into its boot: a
			// return of thread 7 a second later.
			b := capture(tc.bootID, wall.Add(500*time.Millisecond), 50e9, replaytest.Row{Event: format.Event{Probe: 1, Time: 51e9}})
			out := filepath.Join(t.TempDir(), "m.arrow")
			if _, err := format.Merge(out, []string{a, b}, format.MergeOptions{}); err != nil {
				t.Fatal(err)
			}
			c, err := Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, _, err := Latency(c, LatencyOptions{Entry: "f", Return: "f_ret"}, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Calls != tc.calls || res.UnmatchedEntries != 1-tc.calls || res.UnmatchedReturns != 1-tc.calls {
				t.Errorf("%d calls, %d unmatched entries, %d unmatched returns; want %d, %d, %d",
					res.Calls, res.UnmatchedEntries, res.UnmatchedReturns, tc.calls, 1-tc.calls, 1-tc.calls)
			}
		})
	}
}
