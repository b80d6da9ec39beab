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

// maxSeed bounds the forged captures FuzzPerfetto is seeded with: the
// larger ones (stacks-merge, stacks-maps: megabytes) take seconds an input
// under the fuzzer, which then tries a few inputs a minute.
const maxSeed = 1 << 20

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
		if len(b) > maxSeed {
			return // TestHostile writes it; mutating megabytes finds little
		}
		f.Add(b)
	}
	valid := filepath.Join(dir, "valid.arrow")
	if err := formattest.WriteFile(valid, 2000, formattest.Meta(), format.WriterOptions{BatchRows: 512}, 300); err != nil {
		f.Fatal(err)
	}
	seed(valid)
	for _, c := range hostile.Captures() {
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
		for _, o := range hostileOptions {
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

// hostileOptions are the options each forged capture is written with: the
// forged captures pair req and req_ret (some of them also by their string
// field name), the valid seed rx and rx_ret.
var hostileOptions = []Options{
	{},
	{Pairs: []Pair{{"req", "req_ret"}}, Counters: []string{"req.arg0"}},
	{Pairs: []Pair{{"req", "req_ret"}}, Key: []string{"name"}},
	{Pairs: []Pair{{"rx", "rx_ret"}}, Counters: []string{"rx.arg2"}},
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
			for _, o := range hostileOptions {
				var buf bytes.Buffer
				res, pass, err := Write(c, &buf, o)
				if usage.Is(err) {
					continue // the capture lacks what o names
				}
				m := read(t, buf.Bytes())
				if err != nil {
					continue // cut short, as read checked
				}
				if m.open != 0 {
					t.Errorf("%+v: %d slices never ended", o, m.open)
				}
				// Every event is an instant or one end of a slice.
				if got := 2*res.Slices + res.Instants + res.Unmatched; got != pass.Events {
					t.Errorf("%+v: %d slices, %d instants, %d unmatched: %d events, the pass read %d",
						o, res.Slices, res.Instants, res.Unmatched, got, pass.Events)
				}
			}
		})
	}
}
