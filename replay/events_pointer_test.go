package replay

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestEventsPointer checks that events prints a field marked as an address
// in hex and the others as before, and that a format prints it as asked.
func TestEventsPointer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1e9, StartWall: time.Unix(0, 0), Probes: []format.Probe{
		{Name: "rx", Kind: "uprobe", Spec: "u:./p:rx", Fields: []format.Field{
			{Name: "nc", Type: format.Uint64, Pointer: true}, {Name: "size", Type: format.Uint32}, {Name: "raw", Type: format.Uint64}}},
	}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]uint64{{0x7ffd1234abcd, 512, 0x7ffd1234abcd}, {0, 0, 0}} {
		if err := w.Append(&format.Event{Time: 2e9, PID: 1, TID: 1, Comm: []byte("p"), Ints: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	if _, err := Events(c, EventsOptions{Time: "none"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nc=0x7ffd1234abcd size=512 raw=140724908895181\n", "nc=0x0 size=0 raw=0\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("events lack %q:\n%s", want, out.String())
		}
	}
	f, err := ParseEventFormat(`rx "%d %u", nc, size`)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := Events(c, EventsOptions{Time: "none", Formats: []*EventFormat{f}}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "rx               140724908895181 512\n"; !strings.Contains(out.String(), want) {
		t.Errorf("formatted events lack %q:\n%s", want, out.String())
	}
}
