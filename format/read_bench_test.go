package format_test

import (
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil"
)

// BenchmarkRead reads what bpftape hist of one field reads (the probe
// indices, the field and the lost column's validity) from a realistic
// capture: with every column decoded, with only those (Select), and with
// those decoded ahead on one goroutine per CPU; it reports ns per event
// of wall time and of process CPU.
//
//	go test -run '^$' -bench 'Read$' -count 3 ./format/
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.arrow")
	const n = 2 << 20
	if err := formattest.WriteFile(path, n, nil, format.WriterOptions{}, 0); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"every", "selected", "ahead"} {
		b.Run(mode, func(b *testing.B) {
			var col int
			timeReads(b, path, n, func(r *format.Reader) {
				col = r.Column(format.ColumnName("rx", "arg2"))
				if mode != "every" {
					r.Select([]int{col})
				}
				if mode == "ahead" {
					r.ReadAhead = 8
				}
			}, func(bt *format.Batch) (sum int64) {
				c := bt.Col(col)
				for j := 0; j < bt.Len; j++ {
					if _, lost := bt.Lost(j); !lost && bt.Probe[j] == 0 {
						sum += c.Int(j)
					}
				}
				return sum
			})
		})
	}
}

// BenchmarkReadTime reads the time column alone, the dearest to decode
// (a few literal bytes and a zstd match an event), and the field that
// BenchmarkRead reads, each on this goroutine (selected) and decoded
// ahead on one goroutine per CPU (ahead): the CPU per event of the two
// says what decoding ahead costs on this machine.
//
//	go test -run '^$' -bench 'ReadTime$' -count 3 ./format/
func BenchmarkReadTime(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.arrow")
	const n = 2 << 20
	if err := formattest.WriteFile(path, n, nil, format.WriterOptions{}, 0); err != nil {
		b.Fatal(err)
	}
	for _, column := range []string{"time", "arg2"} {
		for _, mode := range []string{"selected", "ahead"} {
			b.Run(column+"/"+mode, func(b *testing.B) {
				col := format.ColTime
				timeReads(b, path, n, func(r *format.Reader) {
					if column == "arg2" {
						col = r.Column(format.ColumnName("rx", "arg2"))
					}
					r.Select([]int{col})
					if mode == "ahead" {
						r.ReadAhead = 8
					}
				}, func(bt *format.Batch) int64 {
					switch {
					case bt.Len == 0:
						return 0
					case col == format.ColTime:
						return bt.Time[bt.Len-1]
					}
					return bt.Col(col).Int(0)
				})
			})
		}
	}
}

// timeReads reads the capture at path (n events) b.N times, each reader
// set up by setup, and sums visit over its batches; it reports wall and
// process CPU time per event, and fails if the sum is 0 (nothing read).
func timeReads(b *testing.B, path string, n int, setup func(*format.Reader), visit func(*format.Batch) int64) {
	cpu0 := testutil.CPUTime()
	var sum int64
	for i := 0; i < b.N; i++ {
		r, err := format.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		setup(r)
		for r.Next() {
			sum += visit(r.Batch())
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	b.StopTimer()
	if sum == 0 {
		b.Fatal("nothing read")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	b.ReportMetric(float64((testutil.CPUTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
}
