package replay

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
)

// BenchmarkHist runs bpftape hist of one field (rx arg2, BCC style) on
// captures of 4M events of formattest's realistic stream — the one bench/
// measures, and one with a loss record every 50,000 events, which makes
// most batches hold one — row by row (rows: the path of a hist with a
// row filter) and a stretch of rows at a time (runs), each with batches
// decoded on the analysis's goroutine (-1) and ahead of it on one per
// CPU, side by side: ns per event of wall time and of process CPU
// (user+sys, every goroutine), and events/s per core.
//
//	go test -run '^$' -bench Hist -count 3 ./replay/
func BenchmarkHist(b *testing.B) {
	const n = 4 << 20
	for _, lossy := range []bool{false, true} {
		path := filepath.Join(b.TempDir(), "bench.arrow")
		name := "stream"
		if lossy {
			writeStream(b, path, n, format.Zstd, 50_000)
			name = "lossy"
		} else {
			writeStream(b, path, n, format.Zstd, 0)
		}
		for _, mode := range []string{"rows-1", "rows", "runs-1", "runs"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				o := HistOptions{Probe: "rx", Field: "arg2"}
				cpu0 := testutil.CPUTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c, err := Open(path)
					if err != nil {
						b.Fatal(err)
					}
					c.perRow = mode == "rows" || mode == "rows-1"
					if mode == "rows-1" || mode == "runs-1" {
						c.r.ReadAhead = 0
					}
					p, err := Hist(c, o, io.Discard)
					if err != nil {
						b.Fatal(err)
					}
					if p.Events != n {
						b.Fatalf("%d events", p.Events)
					}
					c.Close()
				}
				b.StopTimer()
				cpu := float64((testutil.CPUTime() - cpu0).Nanoseconds()) / float64(b.N*n)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
				b.ReportMetric(cpu, "cpu-ns/event")
				b.ReportMetric(1e3/cpu, "Mevents/s/core")
			})
		}
	}
}
