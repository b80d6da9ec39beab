package export

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// csvGoldenProbes have every integer width, strings, an address, stack
// fields (without a stack table: their frames are unknown), a probe with
// no fields and fields named like the fixed columns.
var csvGoldenProbes = func() []format.Probe {
	ps := replaytest.ListingProbes()
	// A probe name that starts as a spreadsheet formula does.
	ps[len(ps)-1].Name, ps[len(ps)-1].Spec = "=nofields", "=nofields=u:/bin/x:g()"
	return ps
}()

// writeCSVGolden writes a capture of csvGoldenProbes with loss records,
// comms and strings that need quoting, escaping or a formula quote, times
// around 10^8 ns multiples and every integer's limits, in small batches.
func writeCSVGolden(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "golden.arrow")
	m := &format.Meta{Host: "h", StartBoot: 99_000_000, StartWall: time.Unix(1700000000, 0), Probes: csvGoldenProbes}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 97})
	if err != nil {
		t.Fatal(err)
	}
	comms := []string{"qemu-system-x86", "a,b", "=cmd", " lead", "rtl\u202eevil", "q\"uote", "", "exactly16chars!!", "CPU 0/KVM",
		"bad\xff\xfeutf8", "x\ny", "-minus", "@at", "\\."}
	strs := []string{"", "hello", `say "hi"`, "a,b", "nul\x00byte", "\xff\xfe", "\u2028sep", "\U000E0001tag", "+1", "\tTab",
		strings.Repeat("long ", 30), "\\.", " sp", "line\r\nend"}
	ints := []uint64{0, 1, math.MaxUint64, 1 << 63, 1<<63 - 1, 255, 128, 1 << 15, 1 << 31, 99_999_999, 100_000_000, 9999, 10_000}
	rng := rand.New(rand.NewSource(5))
	ts := int64(99_000_000)
	for k := 0; k < 4000; k++ {
		ts += int64(rng.Intn(300_000))
		if k == 3000 {
			ts = 1_700_000_000_000_000_000 // a wall-clock-like time
		}
		if k%61 == 9 {
			if err := w.Lost(uint16(k%len(csvGoldenProbes)), uint16(k%4), ts, uint64(k)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		pi := uint16(rng.Intn(len(csvGoldenProbes)))
		tid := uint32(100 + rng.Intn(5))
		e := format.Event{Time: ts, CPU: uint16(rng.Intn(300)), PID: uint32(rng.Intn(3)) * 1000003, TID: tid, Probe: pi,
			Comm: []byte(comms[(int(tid)+k/700)%len(comms)])}
		replaytest.RandomFields(rng, &e, &csvGoldenProbes[pi], ints, strs)
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCSVReference checks WriteCSV byte for byte against refCSV, the
// export as encoding/csv writes it, with every loss mode, redaction,
// formulas, stack ids and row filters.
func TestCSVReference(t *testing.T) {
	path := writeCSVGolden(t)
	for k, o := range []Options{
		{},
		{Lost: LostKeep},
		{Lost: LostOnly},
		{Redact: true},
		{Redact: true, Lost: LostKeep},
		{CSVFormulas: true},
		{StackIDs: true, Lost: LostKeep},
		{Rows: replay.RowFilter{PIDs: []uint32{1000003}}},
		{Rows: replay.RowFilter{From: 10 * time.Millisecond, To: 300 * time.Millisecond}, Lost: LostKeep},
		{Rows: replay.RowFilter{Comms: []string{"a,b", "CPU 0/KVM"}}},
	} {
		o.Format = CSV
		var got, want bytes.Buffer
		if _, _, err := WriteCSV(open(t, path), &got, o); err != nil {
			t.Fatal(err)
		}
		if err := refCSV(open(t, path), &want, o); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			g, w := got.Bytes(), want.Bytes()
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			s := bytes.LastIndexByte(g[:i], '\n') + 1
			t.Errorf("case %d %+v: differs at byte %d:\ngot:  %q\nwant: %q", k, o, i, g[s:min(len(g), i+40)], w[s:min(len(w), i+40)])
		}
		if got.Len() < 1000 {
			t.Errorf("case %d: only %d bytes", k, got.Len())
		}
	}
}

// refCSV writes c as WriteCSV does, through encoding/csv and textValue.
func refCSV(c *replay.Capture, w io.Writer, o Options) error {
	o.Lost = o.lostMode()
	cols := columns(c, &o)
	if _, err := nameStacks(c, &o, cols); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	rec := make([]string, len(cols))
	for k, col := range cols {
		rec[k] = csvText(col.name, &o)
	}
	cw.Write(rec)
	probes := c.Meta().ProbeNames()
	_, err := walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		for k := range cols {
			col := &cols[k]
			s := textValue(b, i, col, probes)
			if col.text() {
				s = csvText(s, &o)
			}
			rec[k] = s
		}
		return cw.Write(rec)
	})
	cw.Flush()
	if err != nil {
		return fmt.Errorf("refCSV: %w", err)
	}
	return cw.Error()
}
