package replay

import (
	"bufio"
	"io"
	"os"
	"testing"

	"github.com/bpftape/bpftape/internal/textsafe"
)

// BenchmarkEventsCapture lists the capture named by
// BPFTAPE_EVENTS_BENCH (say, one that bench/driver synth writes) to
// io.Discard through the writers bpftape's events verb writes through (a
// textsafe.Writer on a 64 KiB bufio.Writer); BPFTAPE_EVENTS_BENCH_JSONL
// set lists it as JSON lines, and BPFTAPE_EVENTS_BENCH_RAW set writes to
// io.Discard itself.
func BenchmarkEventsCapture(b *testing.B) {
	path := os.Getenv("BPFTAPE_EVENTS_BENCH")
	if path == "" {
		b.Skip("BPFTAPE_EVENTS_BENCH names no capture")
	}
	o := EventsOptions{JSONL: os.Getenv("BPFTAPE_EVENTS_BENCH_JSONL") != ""}
	var events uint64
	for b.Loop() {
		c, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(io.Discard, 64<<10)
		tw := textsafe.NewWriter(bw)
		var out io.Writer = tw
		if os.Getenv("BPFTAPE_EVENTS_BENCH_RAW") != "" {
			out = io.Discard // the formatting alone
		}
		p, err := Events(c, o, out)
		if err != nil {
			b.Fatal(err)
		}
		tw.Flush()
		bw.Flush()
		c.Close()
		events += p.Events
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}
