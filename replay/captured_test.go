package replay

import (
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestCapturedMergedHost: a merged capture's host field is what merge
// added, not a string copied from the traced program's memory; a probe's
// own string field is.
func TestCapturedMergedHost(t *testing.T) {
	host := format.Field{Name: format.HostField, Type: format.String}
	m := &format.Meta{Probes: []format.Probe{
		{Name: "a", Fields: []format.Field{{Name: "n", Type: format.Int64}, host}},
		{Name: "b", Fields: []format.Field{{Name: "path", Type: format.String}, host}},
	}}
	const own = "time, cpu, pid, tid and command name of every event; 1 integer field"
	if got, want := Captured(m), own+"; strings copied from memory: a.host, b.path, b.host"; got != want {
		t.Errorf("not merged: %q, want %q", got, want)
	}
	m.Inputs = []format.Meta{{Host: "x"}, {Host: "y"}}
	if got, want := Captured(m), own+"; the host of every event (merged); strings copied from memory: b.path"; got != want {
		t.Errorf("merged: %q, want %q", got, want)
	}
}

// TestInfoSizeLine: info's file size line in words for one batch, no
// compression, a file no smaller than its rows and one of no events.
func TestInfoSizeLine(t *testing.T) {
	for _, c := range []struct {
		comp string
		res  InfoResult
		want string
	}{
		{"zstd", InfoResult{Events: 10, RawBytes: 1000, Ratio: 2.5, BytesPerEvt: 40}, "zstd compression, 40.0 bytes/event, 2.5x smaller than uncompressed Arrow (1000 bytes)"},
		{"none", InfoResult{Events: 10, RawBytes: 1000, Ratio: 0.7, BytesPerEvt: 143}, "uncompressed, 143.0 bytes/event, no smaller than uncompressed Arrow (1000 bytes)"},
		{"lz4", InfoResult{}, "lz4 compression, no events"},
	} {
		if got := compressionText(c.comp) + ", " + sizeRatio(&c.res); got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.comp, c.res, got, c.want)
		}
	}
}
