package record

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutils"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/report"
)

// TestPointerFields records exprs' rx(struct req *req, unsigned int size,
// short delta, const char *label) without a field list, and with
// expressions, and checks that the capture marks the fields that hold
// addresses (format.Field.Pointer) and no others; that events prints them
// in hex; and that a report draws a histogram and a heat map of size but
// not of req, and the latency of rx, which it pairs with rx:return.
func TestPointerFields(t *testing.T) {
	testutils.RequireBPF(t, bpf.CheckFeatures)
	const n = 12
	exe := testutils.BuildC(t, "../testdata/exprs/exprs.c", "exprs-O2", "-O2", "-g")
	s, _ := mustRecord(t, Options{
		RingSize: 8 << 20,
		Command:  []string{exe, "12"},
		Probes: []string{
			"u:" + exe + ":rx",
			"ur:" + exe + ":rx",
			"e=u:" + exe + ":rx(req->next, req->id, req:u64, str(label))",
		},
	})
	c := readCapture(t, s.Output)
	for probe, fields := range map[string]map[string]bool{
		"rx":        {"req": true, "size": false, "delta": false, "label": true},
		"rx:return": {"retval": false},
		"e":         {"req->next": true, "req->id": false, "req": false, "label": false},
	} {
		p := c.probe(t, probe)
		if len(p.Fields) != len(fields) {
			t.Errorf("%s: fields %+v, want %d", probe, p.Fields, len(fields))
		}
		for _, f := range p.Fields {
			if want, ok := fields[f.Name]; ok && f.Pointer != want {
				t.Errorf("%s.%s (%v): pointer %v, want %v", probe, f.Name, f.Type, f.Pointer, want)
			}
		}
	}
	rows := c.rows["rx"]
	if len(rows) != n || len(c.rows["rx:return"]) != n {
		t.Fatalf("%d and %d events, want %d", len(rows), len(c.rows["rx:return"]), n)
	}
	req := uint64(rows[0].ints["req"])
	if req < 0x1000 {
		t.Fatalf("req = %#x, not an address", req)
	}

	rc, err := replay.Open(s.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := replay.Events(rc, replay.EventsOptions{Probes: []string{"rx"}, Time: "none"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != n+1 {
		t.Fatalf("events printed %d lines, want %d:\n%s", len(lines), n+1, out.String())
	}
	// The first call's size is 0, the second's 512 (see exprs.c).
	if want := "req=0x" + strconv.FormatUint(req, 16) + " size=512 "; !strings.Contains(lines[2], want) {
		t.Errorf("second rx event %q lacks %q", lines[2], want)
	}

	out.Reset()
	if _, err := report.Write(rc, &out, report.Options{}); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	for _, want := range []string{"req uint64 (address)", "label uint64 (address)", "Heat map of rx size", "bpftape hist " + s.Output + " rx size",
		"Heat map of e req-&gt;id", `<h2 id="latency">`, "rx → rx:return", "12 calls"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"Heat map of rx req", "bpftape hist " + s.Output + " rx req ", "Heat map of rx label", "Heat map of e req-&gt;next"} {
		if strings.Contains(html, bad) {
			t.Errorf("report has %q", bad)
		}
	}
}
