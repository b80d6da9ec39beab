package record

import (
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestPointerFields records exprs' rx(struct req *req, unsigned int size,
// short delta, const char *label) without a field list, and with
// expressions, and checks that the capture marks the fields that hold
// addresses (format.Field.Pointer) and no others. What events and report
// make of them: TestPointerFieldsOutput in cmd/bpftape.
func TestPointerFields(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	const n = 12
	exe := testutil.BuildC(t, "../testdata/exprs/exprs.c", "exprs-O2", "-O2", "-g")
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
	if req := uint64(rows[0].ints["req"]); req < 0x1000 {
		t.Fatalf("req = %#x, not an address", req)
	}
}
