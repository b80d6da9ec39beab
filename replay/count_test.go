package replay

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
