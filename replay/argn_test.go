package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// argNProbes are the probes of an argN test capture: rx recorded without a
// field list (its fields are rx's parameters, named by its DWARF), listed
// recorded with one, and tx_done a return probe.
func argNProbes() []format.Probe {
	return []format.Probe{
		{Name: "rx", Kind: "uprobe", Spec: "rx=u:./prog:rx", Target: "./prog", Fields: []format.Field{
			{Name: "nc", Type: format.Uint64}, {Name: "buf", Type: format.Uint64}, {Name: "size", Type: format.Uint64}}},
		{Name: "listed", Kind: "uprobe", Spec: "listed=u:./prog:rx(arg2)", Target: "./prog", Fields: []format.Field{
			{Name: "arg2", Type: format.Uint64}}},
		{Name: "tx_done", Kind: "uretprobe", Spec: "tx_done=ur:./prog:tx", Target: "./prog", Fields: []format.Field{
			{Name: "retval", Type: format.Int64}}},
	}
}

func argNCapture(t *testing.T) *Capture {
	t.Helper()
	var rows []row
	for i := range 200 {
		size := uint64(1) << (i % 13)
		rows = append(rows,
			row{probe: 0, tid: 1, t: int64(2000 + 10*i), ints: []uint64{uint64(i % 3), 0x7f0000 + uint64(i), size}},
			row{probe: 1, tid: 1, t: int64(2001 + 10*i), ints: []uint64{size}},
			row{probe: 2, tid: 2, t: int64(2002 + 10*i), ints: []uint64{uint64(i % 7)}})
	}
	return writeCapture(t, argNProbes(), rows)
}

func TestArgNResolve(t *testing.T) {
	c := argNCapture(t)
	for arg, want := range map[string]string{"arg0": "nc", "arg1": "buf", "arg2": "size", "size": "size"} {
		r, err := c.Resolve("rx", arg)
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		want, _ := c.Resolve("rx", want)
		if r != want {
			t.Errorf("%s resolved to %+v, want %+v", arg, r, want)
		}
	}
	// One past the parameters: the error lists them.
	_, err := c.Resolve("rx", "arg3")
	if err == nil || !strings.Contains(err.Error(), `probe rx has no field "arg3": it recorded 3 parameters, arg0..arg2; its fields: nc, buf, size`) {
		t.Errorf("arg3: %v", err)
	}
	_, err = c.Resolve("rx", "len")
	if err == nil || !strings.Contains(err.Error(), `its fields: nc, buf, size (or arg0..arg2)`) {
		t.Errorf("len: %v", err)
	}
	// With a field list the fields are what the list names, nothing else.
	if _, err := c.Resolve("listed", "arg0"); err == nil || !strings.Contains(err.Error(), `no field "arg0"; its fields: arg2`) {
		t.Errorf("listed arg0: %v", err)
	}
	if r, err := c.Resolve("listed", "arg2"); err != nil || r.Field != "arg2" {
		t.Errorf("listed arg2: %+v, %v", r, err)
	}
	if _, err := c.Resolve("tx_done", "arg0"); err == nil || !strings.Contains(err.Error(), `no field "arg0"; its fields: retval`) {
		t.Errorf("tx_done arg0: %v", err)
	}
}

// TestArgNHist: a histogram of arg2 is the histogram of size.
func TestArgNHist(t *testing.T) {
	c := argNCapture(t)
	for _, o := range []HistOptions{
		{Label: "size"},
		{Label: "size", Style: "bpftrace"},
		{Label: "size", By: "arg0"},
		{Label: "size", JSON: true},
	} {
		hist := func(field string) string {
			t.Helper()
			o := o
			o.Probe, o.Field = "rx", field
			var out bytes.Buffer
			if _, err := Hist(c, o, &out); err != nil {
				t.Fatalf("%s %+v: %v", field, o, err)
			}
			return out.String()
		}
		got, want := hist("arg2"), hist("size")
		if got != want || !strings.Contains(want, "size") {
			t.Errorf("%+v: arg2:\n%s\nsize:\n%s", o, got, want)
		}
	}
	var out bytes.Buffer
	if _, err := Hist(c, HistOptions{Probe: "rx", Field: "arg3"}, &out); err == nil || !strings.Contains(err.Error(), "arg0..arg2") {
		t.Errorf("arg3: %v", err)
	}
}

func TestArgsNote(t *testing.T) {
	if got := ArgsNote([]string{"fd"}); got != "arg0 names fd" {
		t.Errorf("one parameter: %q", got)
	}
}

// TestArgNInfo: info says which field each argN names, under the probe
// that has such fields, and only there.
func TestArgNInfo(t *testing.T) {
	c := argNCapture(t)
	var out bytes.Buffer
	if _, _, err := Info(c, false, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	want := "        fields nc uint64, buf uint64, size uint64\n        args   arg0..arg2 name nc, buf, size\nlisted "
	if !strings.Contains(s, want) || strings.Count(s, " args ") != 1 {
		t.Errorf("info:\n%s\nwant it to hold:\n%s", s, want)
	}
}
