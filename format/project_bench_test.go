package format_test

import (
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil"
)

// BenchmarkRead reads what bpftape hist of one field reads — the probe
// indices, the field and the lost column's validity — from a realistic
// capture, with Next (every column) and by projection, and
// reports ns per event.
//
//	go test -run '^$' -bench 'Read$' -count 3 ./format/
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.arrow")
	const n = 2 << 20
	if err := formattest.WriteFile(path, n, nil, format.WriterOptions{}, 0); err != nil {
		b.Fatal(err)
	}
	b.Run("next", func(b *testing.B) {
		cpu0 := testutil.CPUTime()
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
					if _, lost := bt.Lost(j); !lost && bt.Probe[j] == 0 {
						sum += c.Int(j)
					}
				}
			}
			if r.Err() != nil {
				b.Fatal(r.Err())
			}
			r.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.ReportMetric(float64((testutil.CPUTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
	})
	b.Run("projected", func(b *testing.B) {
		cpu0 := testutil.CPUTime()
		var sum int64
		for i := 0; i < b.N; i++ {
			r, err := format.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			p, err := r.Project()
			if err != nil {
				b.Fatal(err)
			}
			col := r.Column(format.ColumnName("rx", "arg2"))
			for p.Next() {
				probes, err := p.Probe()
				if err != nil {
					b.Fatal(err)
				}
				c, err := p.Ints(col)
				if err != nil {
					b.Fatal(err)
				}
				lost, err := p.Validity(format.ColLost)
				if err != nil {
					b.Fatal(err)
				}
				for j, pr := range probes {
					if (lost == nil || lost[j>>3]&(1<<(j&7)) == 0) && pr == 0 {
						sum += int64(c.U64[j])
					}
				}
			}
			if p.Err() != nil {
				b.Fatal(p.Err())
			}
			p.Close()
			r.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.ReportMetric(float64((testutil.CPUTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
	})
}
