package replay

import (
	"io"
	"math/rand"
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

// spanBatch is a batch of 32Ki calls' start (probe 0) and end (probe 1)
// rows: alternating on one thread, or in runs of about 32 rows of one of
// four threads, starts and ends at random (a third of the rows a third
// probe), as the synthesized capture of bench/ has them.
func spanBatch(shape string) *format.Batch {
	const n = 32768
	b := &format.Batch{Len: n, Time: make([]int64, n), TID: make([]uint32, n), Probe: make([]uint16, n)}
	r := rand.New(rand.NewSource(1))
	t, tid := int64(1e9), uint32(7)
	for i := range n {
		t += 500 + r.Int63n(3000)
		b.Time[i] = t
		switch shape {
		case "alternate":
			b.TID[i], b.Probe[i] = 7, uint16(i%2)
		case "runs":
			if r.Intn(32) == 0 {
				tid = uint32(4242 + r.Intn(4))
			}
			b.TID[i], b.Probe[i] = tid, uint16(r.Intn(3))
		}
	}
	return b
}

// BenchmarkLatencySpan pairs a batch's rows by thread (callPairer.span,
// latency's inner loop, without decoding): ns a row.
//
//	go test -run '^$' -bench LatencySpan -count 3 ./replay/
func BenchmarkLatencySpan(b *testing.B) {
	for _, shape := range []string{"alternate", "runs"} {
		bt := spanBatch(shape)
		b.Run(shape, func(b *testing.B) {
			var calls int
			var scratch []int64
			for range b.N {
				var st openCalls
				pr := callPairer{start: 0, end: 1, stacks: &st, scratch: &scratch}
				pr.span(bt, 0, bt.Len, func(d []int64, _ []int32) { calls += len(d) })
			}
			if calls == 0 {
				b.Fatal("no calls paired")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bt.Len), "ns/row")
		})
	}
}

// BenchmarkRequestsSpan sums a batch's item and end rows into requests by
// thread (RequestTotals.sumSpan, requests' inner loop, without decoding),
// the batch decoded once: ns a row. The rows are those of spanBatch, probe
// 0 an item, probe 1 an end, with seed-like sizes.
//
//	go test -run '^$' -bench RequestsSpan -count 3 ./replay/
func BenchmarkRequestsSpan(b *testing.B) {
	for _, shape := range []string{"alternate", "runs"} {
		sb := spanBatch(shape)
		rows := make([]row, sb.Len)
		for i := range rows {
			size := []uint64{66, 1514, 9014}[i/16%3]
			rows[i] = row{probe: min(sb.Probe[i], 1), tid: sb.TID[i], t: sb.Time[i], ints: []uint64{size}}
		}
		m := &format.Meta{Host: "h", StartBoot: 1, Probes: reqProbes}
		path := writeRows(b, m, rows, sb.Len, 0)
		c := openCapture(b, path)
		r, err := NewRequestTotals(c, RequestsOptions{ItemProbe: "item", ItemField: "len", EndProbe: "end", EndField: "retval"}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		rd, err := format.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Close()
		var bt *format.Batch
		for bt == nil || bt.Len == 0 {
			if !rd.Next() {
				b.Fatal("no rows", rd.Err())
			}
			bt = rd.Batch()
		}
		b.Run(shape, func(b *testing.B) {
			for range b.N {
				r.sumSpan(bt, 0, bt.Len, &r.open, &r.res, false)
			}
			if r.res.Requests == 0 {
				b.Fatal("no requests")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bt.Len), "ns/row")
		})
	}
}

// BenchmarkPickRows picks the rows of two probes out of three at random,
// PickMax rows at a time, as latency picks its start and end rows on the
// synthesized capture: ns a row.
//
//	go test -run '^$' -bench PickRows -count 4 ./replay/
func BenchmarkPickRows(b *testing.B) {
	r := rand.New(rand.NewSource(3))
	probes := make([]uint16, 32768)
	for i := range probes {
		probes[i] = uint16(r.Intn(3))
	}
	var rows [PickMax]int32
	picked := 0
	for b.Loop() {
		for first := 0; first < len(probes); first += PickMax {
			picked += PickRows(&rows, probes[first:first+PickMax], first, 0, 1)
		}
	}
	if picked == 0 {
		b.Fatal("nothing picked")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(probes)), "ns/row")
}
