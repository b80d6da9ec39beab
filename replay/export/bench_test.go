package export

import (
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/replay"
)

// synthStacks writes a capture of n events of a profiler-like probe
// (arg0 and a user stack) whose stacks are drawn, skewed, from a few
// hundred unique stacks of 8 to 40 frames of one binary with long
// (C++/Go-like) function names: the shape of a `record ... (ustack)` of a
// real program, whose folded frames are long and repeat a lot.
func synthStacks(path string, n int) error {
	const (
		pid     = 7
		nsyms   = 400
		nstacks = 300
		symSize = 0x100
		text    = 0x400000
	)
	meta := &format.Meta{Host: "h1", Kernel: "6.1", StartBoot: base, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "leaf", Kind: "uprobe", Spec: "leaf=u:/usr/bin/app:leaf(arg0,ustack)", Fields: []format.Field{
			{Name: "arg0", Type: format.Uint64}, {Name: "ustack", Type: format.UserStack}}},
	}}
	w, err := format.Create(path, meta, format.WriterOptions{})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(3))
	tab := &format.StackTable{
		Objects: []format.Object{{ID: 1, Path: "/usr/bin/app", BuildID: "0123456789abcdef"}},
		Maps:    []format.Mapping{{PID: pid, Since: base, Start: text, End: text + nsyms*symSize, Object: 1}},
	}
	for s := 0; s < nsyms; s++ {
		tab.Symbols = append(tab.Symbols, format.Symbol{Object: 1, Addr: text + uint64(s)*symSize, Size: symSize,
			Name: fmt.Sprintf("github.com/example/app/internal/pkg%d.(*Server%d).handleRequest%d", s%17, s%5, s)})
	}
	ids := make([]uint64, nstacks)
	for s := range ids {
		frames := make([]uint64, 8+rng.Intn(33))
		for k := range frames {
			frames[k] = text + uint64(rng.Intn(nsyms))*symSize + 5
		}
		frames[0] -= 5 // the first frame is the probed address, not a return address
		ids[s] = format.StackID(false, frames)
		tab.Stacks = append(tab.Stacks, format.Stack{ID: ids[s], Frames: frames})
	}
	w.AddStacks(tab)
	e := format.Event{PID: pid, TID: pid, Comm: []byte("app"), Ints: make([]uint64, 2), Strs: make([][]byte, 2)}
	t := base
	for i := 0; i < n; i++ {
		t += 1000 + rng.Int63n(20000)
		e.Time = t
		e.TID = pid + uint32(rng.Intn(4))
		e.CPU = uint16(e.TID % 2)
		e.Ints[0] = uint64(rng.Intn(1 << 16))
		// Skewed: a few stacks are most of the events, as in a profile.
		s := int(float64(nstacks) * rng.Float64() * rng.Float64() * rng.Float64())
		e.Ints[1] = ids[s]
		if i%50 == 0 {
			e.Ints[1] = 0 // no stack
		}
		if err := w.Append(&e); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// benchCaptures are made once per test binary: plain (formattest's
// stream) and stacks (synthStacks).
var benchCaptures struct {
	once         sync.Once
	dir          string
	plain, stack string
	err          error
}

const benchEvents = 1 << 20

func benchCapture(b *testing.B, stacks bool) string {
	benchCaptures.once.Do(func() {
		c := &benchCaptures
		if c.dir, c.err = os.MkdirTemp("", "bpftape-export-bench"); c.err != nil {
			return
		}
		c.plain, c.stack = filepath.Join(c.dir, "plain.arrow"), filepath.Join(c.dir, "stacks.arrow")
		if c.err = formattest.WriteFile(c.plain, benchEvents, nil, format.WriterOptions{}, 0); c.err != nil {
			return
		}
		c.err = synthStacks(c.stack, benchEvents)
	})
	if benchCaptures.err != nil {
		b.Fatal(benchCaptures.err)
	}
	if stacks {
		return benchCaptures.stack
	}
	return benchCaptures.plain
}

// countWriter counts what an export writes, and throws it away.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

func benchExport(b *testing.B, f Format, stacks bool) {
	path := benchCapture(b, stacks)
	c, err := replay.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	write := map[Format]func(*replay.Capture, io.Writer, Options) (*Result, *replay.Pass, error){
		CSV: WriteCSV, JSONL: WriteJSONL, Parquet: WriteParquet, Arrow: WriteArrow,
	}[f]
	b.ReportAllocs()
	b.ResetTimer()
	var out int64
	var events uint64
	for range b.N {
		w := &countWriter{}
		res, _, err := write(c, w, Options{Format: f})
		if err != nil {
			b.Fatal(err)
		}
		out += w.n
		events += res.Events
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(out)/float64(events), "bytes/event")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkExportCSV(b *testing.B)           { benchExport(b, CSV, false) }
func BenchmarkExportCSVStacks(b *testing.B)     { benchExport(b, CSV, true) }
func BenchmarkExportJSONL(b *testing.B)         { benchExport(b, JSONL, false) }
func BenchmarkExportParquet(b *testing.B)       { benchExport(b, Parquet, false) }
func BenchmarkExportParquetStacks(b *testing.B) { benchExport(b, Parquet, true) }

// TestParquetStacksSize checks that a Parquet export of a capture with
// stacks, whose stack field is folded frames, takes at most 1.5 times the
// capture: the frames are a dictionary of the few stacks, each row an
// index, not the frames again.
func TestParquetStacksSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stacks.arrow")
	if err := synthStacks(path, 300_000); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, path)
	w := &countWriter{}
	res, _, err := WriteParquet(c, w, Options{Format: Parquet})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 300_000 {
		t.Fatalf("%d events, want 300000", res.Events)
	}
	if ratio := float64(w.n) / float64(st.Size()); ratio > 1.5 {
		t.Errorf("parquet %d bytes, %.2f times the capture's %d", w.n, ratio, st.Size())
	} else {
		t.Logf("parquet %d bytes, %.2f times the capture's %d", w.n, ratio, st.Size())
	}
}
