package perfetto

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
)

// FuzzPerfetto writes a trace of any capture, seeded with a valid capture
// and the forged ones of internal/testutil/hostile: no panic, no hang, and
// whatever is written (also before an error) decodes with protoc and keeps
// Perfetto's rules (read); a trace written whole leaves no slice open.
func FuzzPerfetto(f *testing.F) {
	dir := f.TempDir()
	seed := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	valid := filepath.Join(dir, "valid.arrow")
	if err := formattest.WriteFile(valid, 2000, formattest.Meta(), format.WriterOptions{BatchRows: 512}, 300); err != nil {
		f.Fatal(err)
	}
	seed(valid)
	for _, c := range hostile.Captures() {
		if c.Name == "many-hosts" || testing.Short() && (c.Name == "stacks-merge" || c.Name == "stacks-maps" || c.Name == "stacks-kernel") {
			continue // slow to open for every input; TestHostile writes them
		}
		p := filepath.Join(dir, c.Name+".arrow")
		if err := c.Write(p); err != nil {
			f.Fatal(err)
		}
		seed(p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := filepath.Join(t.TempDir(), "in.arrow")
		if err := os.WriteFile(in, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := replay.Open(in)
		if err != nil {
			return
		}
		defer c.Close()
		// The forged captures name req/req_ret, the valid one rx/rx_ret.
		for _, o := range []Options{
			{},
			{Pairs: []Pair{{"req", "req_ret"}}, Counters: []string{"req.arg0"}},
			{Pairs: []Pair{{"req", "req_ret"}}, Key: []string{"arg0"}},
			{Pairs: []Pair{{"rx", "rx_ret"}}, Counters: []string{"rx.arg2"}},
		} {
			var buf bytes.Buffer
			_, _, err := Write(c, &buf, o)
			if usage.Is(err) {
				if buf.Len() != 0 {
					t.Errorf("%+v: a usage error after writing %d bytes", o, buf.Len())
				}
				continue
			}
			m := read(t, buf.Bytes())
			if err == nil && m.open != 0 {
				t.Errorf("%+v: %d slices never ended", o, m.open)
			}
		}
	})
}

// TestHostile writes a trace of every forged capture, the slow ones too.
func TestHostile(t *testing.T) {
	for _, hc := range hostile.Captures() {
		t.Run(hc.Name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), hc.Name+".arrow")
			if err := hc.Write(p); err != nil {
				t.Fatal(err)
			}
			c, err := replay.Open(p)
			if err != nil {
				t.Logf("the reader refuses it: %v", err)
				return
			}
			defer c.Close()
			var buf bytes.Buffer
			res, pass, err := Write(c, &buf, Options{})
			m := read(t, buf.Bytes())
			if err != nil {
				return // cut short, as read checked
			}
			if m.open != 0 {
				t.Errorf("%d slices never ended", m.open)
			}
			// Every event is an instant or one end of a slice.
			if got := 2*res.Slices + res.Instants + res.Unmatched; got != pass.Events {
				t.Errorf("%d slices, %d instants, %d unmatched: %d events, the pass read %d", res.Slices, res.Instants, res.Unmatched, got, pass.Events)
			}
		})
	}
}
