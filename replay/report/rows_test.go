package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/replay"
)

// TestReportRowFilter checks that a report made with --pid, --comm, --from
// and --to says which rows it shows, and one made without says nothing.
func TestReportRowFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	writeCapture(t, path, "h")
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		rows replay.RowFilter
		want string
	}{
		{replay.RowFilter{}, ""},
		{replay.RowFilter{PIDs: []uint32{100}, Comms: []string{"q"}, From: time.Second, To: 2 * time.Second},
			"this report shows only events with pid [100]; comm q; from &#43;1s to &#43;2s."},
	} {
		var b bytes.Buffer
		if _, err := Write(c, &b, Options{Rows: tc.rows, MaxHeatmaps: -1}); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		has := strings.Contains(html, `id="filter"`)
		if tc.want == "" && has {
			t.Errorf("%+v: the report says it is filtered", tc.rows)
		}
		if tc.want != "" && (!has || !strings.Contains(html, tc.want)) {
			t.Errorf("%+v: the report lacks %q", tc.rows, tc.want)
		}
	}
}
