package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// goldenProbes are the probes of writeGoldenCapture: strings, an address,
// stacks, every integer width, fields named like the fixed columns, and a
// probe with no fields.
var goldenProbes = replaytest.ListingProbes()

var (
	goldenComms = []string{"qemu-system-x86", "a\nb", "rtl\u202eevil", `back\slash`, "tab\there", "\u0085c1", "日本語のスレッド",
		"", "exactly16chars!!", "x\x1b[31m", "CPU 0/KVM", "bad\xff\xfeutf8"}
	goldenStrs = []string{"", "hello", `say "hi"`, "nul\x00byte", "\xff\xfe", "\u2028sep", "emoji 😀", "\U000E0001tag",
		"ctl\x07bell", `back\`, strings.Repeat("long ", 60), "quote'\"`", "\u202eRLO"}
	goldenInts = []uint64{0, 1, math.MaxUint64, 1 << 63, 1<<63 - 1, 1<<53 + 1, 1 << 53, 255, 0x7ffd1234abcd, uint64(1<<64 - 2)}
)

// writeGoldenCapture writes a capture of every probe of goldenProbes, with
// loss records between the events, events before the capture's start and
// at half microseconds, in small batches.
func writeGoldenCapture(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "golden.arrow")
	const start = int64(1_000_000_000_000)
	m := &format.Meta{Host: "h", StartBoot: start, StartWall: time.Date(2024, 3, 10, 23, 59, 58, 999_999_500, time.UTC), Probes: goldenProbes}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 97})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	ts := start - 2_000_500 // the first events are before the start
	for k := 0; k < 3000; k++ {
		switch k % 7 {
		case 0:
			ts += 500 // a half microsecond
		case 3:
			ts += int64(rng.Intn(3_000_000))
		default:
			ts += int64(rng.Intn(2000))
		}
		if k == 2000 {
			ts += 86400 * 3 * 1e9 // days later
		}
		if k%53 == 5 {
			if err := w.Lost(uint16(k%len(goldenProbes)), uint16(k%4), ts, uint64(k)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		pi := uint16(rng.Intn(len(goldenProbes)))
		tid := uint32(100 + rng.Intn(6))
		e := format.Event{Time: ts, CPU: uint16(rng.Intn(4)), PID: uint32(rng.Intn(3)) * 1000000, TID: tid, Probe: pi,
			Comm: []byte(goldenComms[(int(tid)+k/500)%len(goldenComms)])}
		replaytest.RandomFields(rng, &e, &goldenProbes[pi], goldenInts, goldenStrs)
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// goldenCases are the listings TestEventsGolden compares.
func goldenCases(t testing.TB) []EventsOptions {
	fs := func(specs ...string) []*EventFormat {
		var out []*EventFormat
		for _, s := range specs {
			f, err := ParseEventFormat(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, f)
		}
		return out
	}
	all := fs(`str "n=%d s=%s u=%u p=%p c=%c x=%x X=%X o=%o %%", n, s, u, p, c, u, u, u`,
		`small "%-5d|%5d|%+d|%08x|%#x|%-10s|%5s|%s|%d|%p", a, b, cc, d, d, comm, comm, pid, comm, comm`,
		`stk "%lu %llx %s %c|%-20d|%020u", ustack, kstack, v, v, ustack, kstack`,
		`ret "%i %zd %5.2s %x %o %u", retval, retval, retval, retval, retval, retval`)
	return []EventsOptions{
		{},
		{Time: "rel"},
		{Time: "wall"},
		{Time: "none"},
		{Probes: []string{"stk", "small"}},
		{Probes: []string{"nofields"}, Time: "wall"},
		{Limit: 7},
		{Limit: 1000, Time: "wall"},
		{Rows: RowFilter{PIDs: []uint32{1000000}}},
		{Rows: RowFilter{TIDs: []uint32{101, 103}}, Time: "none"},
		{Rows: RowFilter{Comms: []string{"tab\there", "日本語のスレッド"}}},
		{Rows: RowFilter{From: time.Millisecond, To: 2 * time.Second}},
		{Formats: all},
		{Formats: all, Time: "wall"},
		{Formats: all[1:2], Probes: []string{"small", "str"}, Time: "none"},
		{Formats: fs(`str "%s|%-8s|%.3s", s, s, s`), Probes: []string{"str"}},
		{Time: "bogus"},
	}
}

// goldenEventsSHA256 is the SHA-256 of every goldenCases listing of the
// golden capture, written by Events before it formatted into a reused
// buffer (the fmt version, refEvents below).
const goldenEventsSHA256 = "3a5b168824277b4195caaa77df93739053775cf1eec5aed5f8ebf82c2c2d0d75"

// TestEventsGolden checks that Events prints the golden capture byte for
// byte as refEvents (the original fmt-based formatter, kept below as the
// reference) does, in every time mode, with probes, formats, limits and
// row filters; and that the whole is the output recorded before.
func TestEventsGolden(t *testing.T) {
	path := writeGoldenCapture(t, t.TempDir())
	sum := sha256.New()
	for k, o := range goldenCases(t) {
		got, gerr := runEvents(t, path, o, Events)
		want, werr := runEvents(t, path, o, refEvents)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("case %d %+v: error %v, want %v", k, o, gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("case %d %+v: output differs from the reference at byte %d:\n%s", k, o, firstDiff(got, want), diffContext(got, want))
		}
		if dir := os.Getenv("BPFTAPE_EVENTS_GOLDEN_DUMP"); dir != "" { // to look at the listings

			os.WriteFile(filepath.Join(dir, fmt.Sprintf("case%02d.txt", k)), got, 0o644)
		}
		fmt.Fprintf(sum, "case %d %d\n", k, len(got))
		sum.Write(got)
	}
	if h := hex.EncodeToString(sum.Sum(nil)); h != goldenEventsSHA256 {
		t.Errorf("golden listings hash %s, want %s", h, goldenEventsSHA256)
	}
}

func runEvents(t testing.TB, path string, o EventsOptions, fn func(*Capture, EventsOptions, io.Writer) (*Pass, error)) ([]byte, error) {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	_, err = fn(c, o, &out)
	return out.Bytes(), err
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func diffContext(got, want []byte) string {
	i := firstDiff(got, want)
	line := func(b []byte) string {
		s := bytes.LastIndexByte(b[:min(i, len(b))], '\n') + 1
		e := bytes.IndexByte(b[min(i, len(b)):], '\n')
		if e < 0 {
			return string(b[s:])
		}
		return string(b[s : min(i, len(b))+e])
	}
	return "got:  " + strconv.Quote(line(got)) + "\nwant: " + strconv.Quote(line(want))
}

// refEvents is Events as it was written with fmt, before it formatted into
// a reused buffer: the reference its output must equal byte for byte.
func refEvents(c *Capture, o EventsOptions, out io.Writer) (*Pass, error) {
	type refOut struct {
		show   bool
		fields []int
		types  []format.Type
		names  []string
		ptrs   []bool
		verbs  []verb
	}
	m := c.Meta()
	outs := make([]refOut, len(m.Probes))
	for i := range outs {
		outs[i].show = len(o.Probes) == 0
		p := &m.Probes[i]
		for _, f := range p.Fields {
			outs[i].fields = append(outs[i].fields, c.Column(f.Column))
			outs[i].types = append(outs[i].types, f.Type)
			outs[i].names = append(outs[i].names, f.Name)
			outs[i].ptrs = append(outs[i].ptrs, f.Pointer && f.Type.IsInt())
		}
	}
	for _, name := range o.Probes {
		pi, err := c.ResolveProbe(name)
		if err != nil {
			return nil, err
		}
		outs[pi].show = true
	}
	for _, f := range o.Formats {
		pi, err := c.ResolveProbe(f.Probe)
		if err != nil {
			return nil, err
		}
		po := &outs[pi]
		po.fields, po.types, po.names, po.ptrs = nil, nil, nil, nil
		for _, name := range f.Fields {
			r, err := c.Resolve(f.Probe, name)
			if err != nil {
				return nil, err
			}
			po.fields = append(po.fields, r.col)
			po.types = append(po.types, r.typ)
		}
		po.verbs = f.verbs
	}
	switch o.Time {
	case "", "rel":
		fmt.Fprintf(out, "%-14s ", "TIME")
	case "wall":
		fmt.Fprintf(out, "%-15s ", "TIME")
	case "none":
	default:
		return nil, fmt.Errorf("--time %q: use rel, wall or none", o.Time)
	}
	fmt.Fprintf(out, "%-7s %-7s %-15s %-16s %s\n", "PID", "TID", "COMM", "FUNC", "-")
	var n uint64
	var line []byte
	stop := false
	return c.Scan(&o.Rows, func(b *format.Batch, i int) {
		po := &outs[b.Probe[i]]
		if !po.show || stop {
			return
		}
		line = line[:0]
		switch o.Time {
		case "", "rel":
			line = fmt.Appendf(line, "%-14.6f ", float64(b.Time[i]-m.StartBoot)/1e9)
		case "wall":
			line = m.WallTime(b.Time[i]).AppendFormat(line, "15:04:05.000000")
			line = append(line, ' ')
		}
		line = fmt.Appendf(line, "%-7d %-7d %-15s %-16s ", b.PID[i], b.TID[i], textsafe.Escape(b.Comm(i)), textsafe.Escape(m.Probes[b.Probe[i]].Name))
		if po.verbs != nil {
			for k, v := range po.verbs {
				line = append(line, v.lit...)
				if v.spec == "" {
					break
				}
				col := b.Col(po.fields[k])
				switch {
				case !col.Valid(i):
					line = append(line, "?"...)
				case v.kind == 's' || col.Type == format.String:
					line = fmt.Appendf(line, strings.Replace(v.spec, string(v.spec[len(v.spec)-1]), "s", 1), textsafe.Escape(col.Str(i)))
				case v.kind == 'u' || v.kind == 'c' || col.Type == format.Uint64:
					line = fmt.Appendf(line, v.spec, uint64(col.Int(i)))
				default:
					line = fmt.Appendf(line, v.spec, col.Int(i))
				}
			}
		} else {
			for k, ci := range po.fields {
				if k > 0 {
					line = append(line, ' ')
				}
				col := b.Col(ci)
				line = append(line, textsafe.Escape(po.names[k])...)
				line = append(line, '=')
				switch {
				case po.types[k] == format.String:
					line = strconv.AppendQuote(line, col.Str(i))
				case po.ptrs[k] && col.Valid(i):
					line = append(line, "0x"...)
					line = strconv.AppendUint(line, uint64(col.Int(i)), 16)
				default:
					line = append(line, col.Str(i)...)
				}
			}
		}
		line = append(line, '\n')
		out.Write(line)
		n++
		if o.Limit > 0 && n >= o.Limit {
			stop = true
		}
	})
}
