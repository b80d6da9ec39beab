package zstdframe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// timeColumn is n boot-clock times from start, gaps drawn around mean ns
// (exponential), with some equal neighbours and a few jumps back, as a
// capture's time column has (merged CPUs, loss records).
func timeColumn(r *rand.Rand, n int, start int64, mean float64) []byte {
	b := make([]byte, 0, 8*n)
	t := start
	for range n {
		switch x := r.Intn(1000); {
		case x < 20: // same time
		case x < 22:
			t -= int64(r.Intn(5000))
		default:
			t += int64(r.ExpFloat64() * mean)
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	return b
}

// timeCases are time columns of many shapes and sizes, by name: edge
// cases, then times the given mean gaps apart, at sizes around a block's.
func timeCases(r *rand.Rand, means ...float64) map[string][]byte {
	cases := map[string][]byte{
		"empty":    nil,
		"one":      timeColumn(r, 1, 12_345_678_901_234, 300),
		"odd tail": append(timeColumn(r, 100, 1e13, 300), 1, 2, 3),
		"equal":    bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 70000),
		"random":   func() []byte { b := make([]byte, 8*5000); r.Read(b); return b }(),
		"short":    []byte{9, 8, 7},
	}
	for _, n := range []int{2, 100, 16383, 16384, 16385, 32768, 70000} {
		for _, mean := range means {
			cases[fmt.Sprintf("%d times %gns apart", n, mean)] = timeColumn(r, n, 8e12+r.Int63n(1e13), mean)
		}
	}
	return cases
}

func decode(t testing.TB, frame []byte) []byte {
	t.Helper()
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := d.DecodeAll(frame, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return out
}

// TestRoundTrip decodes, with klauspost's zstd decoder (which checks the
// content size and checksum), what Encode wrote for time columns of many
// shapes and sizes, and holds their size to what klauspost's fastest
// level makes of the same bytes.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	fast, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	var e TimeEncoder
	for name, src := range timeCases(r, 50, 2000, 7000, 1e6) {
		frame := e.Encode([]byte("prefix"), src)
		if !bytes.HasPrefix(frame, []byte("prefix")) {
			t.Fatalf("%s: dst's prefix lost", name)
		}
		got := decode(t, frame[6:])
		if !bytes.Equal(got, src) {
			t.Fatalf("%s: %d bytes decoded, want %d equal to the input", name, len(got), len(src))
		}
		ref := fast.EncodeAll(src, nil)
		if len(src) >= 8*1000 && float64(len(frame)-6) > 1.02*float64(len(ref)) {
			t.Errorf("%s: %d bytes, klauspost's fastest level %d", name, len(frame)-6, len(ref))
		}
		t.Logf("%s: %d values: %d bytes, klauspost fastest %d", name, len(src)/8, len(frame)-6, len(ref))
	}
}

// FuzzRoundTrip encodes time columns built from the fuzzer's gaps and
// arbitrary bytes, and decodes them.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, int64(1e13))
	f.Add(bytes.Repeat([]byte{0}, 64), int64(0))
	var e TimeEncoder
	d, err := zstd.NewReader(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, gaps []byte, start int64) {
		// as gaps: each byte a gap of byte<<(byte%24) ns
		src := make([]byte, 0, 8*len(gaps))
		v := start
		for _, g := range gaps {
			v += int64(g) << (g % 24)
			src = binary.LittleEndian.AppendUint64(src, uint64(v))
		}
		for _, in := range [][]byte{src, gaps} {
			got, err := d.DecodeAll(e.Encode(nil, in), nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got, in) {
				t.Fatalf("decoded %d bytes, not the %d encoded", len(got), len(in))
			}
		}
	})
}

// BenchmarkEncode sets Encode against klauspost's fastest level (what the
// time column had before) on a batch's time column, 32Ki values:
//
//	go test -run '^$' -bench Encode ./format/internal/zstdframe/
func BenchmarkEncode(b *testing.B) {
	fast, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(true), zstd.WithLowerEncoderMem(true))
	if err != nil {
		b.Fatal(err)
	}
	var e TimeEncoder
	for _, mean := range []float64{300, 2000, 7000} {
		src := timeColumn(rand.New(rand.NewSource(2)), 32<<10, 1e13, mean)
		for _, enc := range []struct {
			name string
			fn   func(dst, src []byte) []byte
		}{{"zstdtime", e.Encode}, {"klauspost-fastest", func(dst, src []byte) []byte { return fast.EncodeAll(src, dst) }}} {
			b.Run(fmt.Sprintf("gap=%gns/%s", mean, enc.name), func(b *testing.B) {
				var dst []byte
				for b.Loop() {
					dst = enc.fn(dst[:0], src)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)/8), "ns/value")
				b.ReportMetric(float64(len(dst))/float64(len(src)/8), "bytes/value")
			})
		}
	}
}
