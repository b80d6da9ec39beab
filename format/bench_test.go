package format_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil"
)

// BenchmarkWriter appends a realistic stream and writes compressed batches;
// it reports process CPU per event (append + encode + compress + write, on
// both goroutines) and bytes per event on disk.
//
//	go test -run '^$' -bench Writer -benchtime 2000000x ./format/
func BenchmarkWriter(b *testing.B) {
	for _, comp := range []format.Compression{format.Zstd, format.LZ4, format.None} {
		b.Run(string(comp), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.arrow")
			evs := formattest.Pregenerate(1 << 20)
			b.ReportAllocs()
			cpu0 := testutil.CPUTime()
			b.ResetTimer()
			w, err := format.Create(path, formattest.Meta(), format.WriterOptions{Compression: comp})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				e := &evs[i&(len(evs)-1)]
				e.Time += int64(i>>20) * 1e9 // keep time increasing on each lap
				if err := w.Append(e); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := testutil.CPUTime() - cpu0
			st, _ := os.Stat(path)
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
			b.ReportMetric(float64(st.Size())/float64(b.N), "bytes/event")
			if b.N >= 1<<16 {
				b.Log(columnBreakdown(w, st.Size(), b.N))
			}
		})
	}
}

// BenchmarkAppend measures Append alone: batches go uncompressed to
// io.Discard, so the encoder goroutine has next to nothing to do.
func BenchmarkAppend(b *testing.B) {
	evs := formattest.Pregenerate(1 << 20)
	w, err := format.NewWriter(io.Discard, formattest.Meta(), format.WriterOptions{Compression: format.None})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Append(&evs[i&(len(evs)-1)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// TestSeedStreamSize holds the default capture of the seed-like stream to
// the budget of 4 bytes an event, and logs what each column costs
// (go test -v -run SeedStreamSize ./format/).
func TestSeedStreamSize(t *testing.T) {
	const n = 1 << 20
	path := filepath.Join(t.TempDir(), "seed.arrow")
	w, err := format.Create(path, formattest.Meta(), format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := formattest.NewStream()
	for i := 0; i < n; i++ {
		if err := w.Append(s.Next()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(columnBreakdown(w, st.Size(), n))
	if per := float64(st.Size()) / n; per > 4 {
		t.Errorf("%.3f bytes an event, want at most 4", per)
	}
}

// columnBreakdown says how many bytes per event each column of a closed
// writer's file takes, largest first, and the rest of the file (schema,
// dictionary, batch metadata, footer).
func columnBreakdown(w *format.Writer, size int64, events int) string {
	cb := w.ColumnBytes()
	names := make([]string, 0, len(cb))
	rest := size
	for name, n := range cb {
		names = append(names, name)
		rest -= n
	}
	sort.Slice(names, func(i, j int) bool { return cb[names[i]] > cb[names[j]] })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%.3f bytes/event:", float64(size)/float64(events))
	for _, name := range names {
		fmt.Fprintf(&sb, " %s %.3f", name, float64(cb[name])/float64(events))
	}
	fmt.Fprintf(&sb, " (metadata and framing %.3f)", float64(rest)/float64(events))
	return sb.String()
}

// BenchmarkReader scans a realistic capture, touching every column.
func BenchmarkReader(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.arrow")
	const n = 1 << 20
	if err := formattest.WriteFile(path, n, nil, format.WriterOptions{}, 0); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var sum int64
	for i := 0; i < b.N; i++ {
		r, err := format.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		col := r.Column(format.ColumnName("rx", "arg2"))
		for r.Next() {
			bt := r.Batch()
			c := bt.Col(col)
			for j := 0; j < bt.Len; j++ {
				sum += bt.Time[j] + int64(bt.TID[j])
				if c.Valid(j) {
					sum += c.Int(j)
				}
			}
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	_ = sum
}
