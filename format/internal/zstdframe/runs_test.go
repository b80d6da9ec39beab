package zstdframe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// inRuns is n values of width w in runs of 1 to maxRun values, each a
// value from a few (as a few threads' tids), the runs' lengths from r.
func inRuns(r *rand.Rand, w, n, maxRun int) []byte {
	var vals [5]uint64
	for i := range vals {
		vals[i] = r.Uint64()
	}
	b := make([]byte, 0, n*w)
	for len(b) < n*w {
		v := vals[r.Intn(len(vals))]
		for range 1 + r.Intn(maxRun) {
			if len(b) == n*w {
				break
			}
			b = binary.LittleEndian.AppendUint64(b, v)[:len(b)+w]
		}
	}
	return b
}

// TestRuns decodes, with klauspost's decoder as the capture reader sets
// it, what RunEncoder wrote for columns of every width in runs long and
// short, of sizes about the block boundaries (runs go on from one block to
// the next), and checks that it is no larger than klauspost's encoder's
// frame by more than 10% and 160 bytes, 35% for 1- and 2-byte values
// (whose runs under 50 long cost it a sequence or two more than
// klauspost's), and the buffers it refuses.
func TestRuns(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	d := readerDecoder(t)
	enc := writerEncoder(t)
	var e RunEncoder
	prefix := []byte("prefix")
	for _, w := range []int{1, 2, 4, 8} {
		for _, n := range []int{minRunBuffer / w, 1000, blockMax/w - 1, blockMax / w, blockMax/w + 1, 3*blockMax/w + 5, 32 << 10} {
			for _, maxRun := range []int{20, 21, 40, 100, 5000} {
				src := inRuns(r, w, n, maxRun)
				frame, ok := e.Append(bytes.Clone(prefix), src, w)
				if !ok {
					t.Errorf("width %d, %d values, runs to %d: refused", w, n, maxRun)
					continue
				}
				if !bytes.HasPrefix(frame, prefix) {
					t.Fatalf("width %d: the frame overwrote dst", w)
				}
				frame = frame[len(prefix):]
				got, err := d.DecodeAll(frame, make([]byte, 0, len(src)+16))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("width %d, %d values, runs to %d: decoded %d bytes of %d, equal %v, error %v", w, n, maxRun, len(got), len(src), bytes.Equal(got, src), err)
				}
				tolerance := 10 // percent
				if w <= 2 {
					tolerance = 35
				}
				if theirs := enc.EncodeAll(src, nil); len(frame) > len(theirs)+len(theirs)*tolerance/100+160 {
					t.Errorf("width %d, %d values, runs to %d: a frame of %d bytes, klauspost's %d", w, n, maxRun, len(frame), len(theirs))
				}
				bad := bytes.Clone(frame)
				bad[len(bad)/2] ^= 1
				// A flipped bit fails the checksum, or is one that no
				// decoder reads (padding).
				if got, err := d.DecodeAll(bad, make([]byte, 0, len(src)+16)); err == nil && !bytes.Equal(got, src) {
					t.Errorf("width %d, %d values: a corrupt frame decoded, to other bytes", w, n)
				}
			}
		}
	}
	for name, c := range map[string]struct {
		src []byte
		w   int
	}{
		"short":      {inRuns(r, 4, minRunBuffer/4-1, 100), 4},
		"width 3":    {inRuns(r, 4, 1000, 100), 3},
		"width 16":   {inRuns(r, 8, 1000, 100), 16},
		"ragged":     {inRuns(r, 4, 1000, 100)[:3999], 4},
		"short runs": {inRuns(r, 4, 4096, 7), 4},
		"random":     {func() []byte { b := make([]byte, 4096); r.Read(b); return b }(), 2},
	} {
		if frame, ok := e.Append(prefix, c.src, c.w); ok || !bytes.Equal(frame, prefix) {
			t.Errorf("%s: took the buffer (%v, %d bytes)", name, ok, len(frame))
		}
	}
}

// FuzzRuns checks RunEncoder on buffers in runs of the fuzzer's lengths:
// a frame it writes decodes to the buffer, and it takes a buffer just when
// its runs are long enough.
func FuzzRuns(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, []byte{16, 1, 200, 3}, uint8(4), uint32(2000))
	f.Add([]byte{5, 6}, []byte{255, 2}, uint8(1), uint32(blockMax+3))
	f.Add([]byte{7, 8, 9, 10, 11, 12, 13, 14}, []byte{3, 15, 16, 17}, uint8(8), uint32(3*blockMax))
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	var e RunEncoder
	f.Fuzz(func(t *testing.T, values, runs []byte, w uint8, n uint32) {
		if len(values) == 0 || len(runs) == 0 || n > 3*blockMax || (w != 1 && w != 2 && w != 4 && w != 8) {
			return
		}
		ww := int(w)
		src := make([]byte, 0, n)
		for k := 0; len(src)+ww <= int(n); k++ {
			v := values[k%len(values)]
			for range 1 + int(runs[k%len(runs)]) {
				if len(src)+ww > int(n) {
					break
				}
				for b := range ww {
					src = append(src, v+byte(b))
				}
			}
		}
		frame, ok := e.Append(nil, src, ww)
		long := len(src) >= minRunBuffer
		if long {
			head := src[:min(len(src), runsLook)]
			runs := 1
			for i := ww; i < len(head); i += ww {
				if !bytes.Equal(head[i:i+ww], head[i-ww:i]) {
					runs++
				}
			}
			long = runs-1 <= len(head)/ww/minMeanRun
		}
		for start := 0; start < len(src) && long; start += blockMax {
			block := src[start:min(start+blockMax, len(src))]
			runs := 1
			for i := ww; i < len(block); i += ww {
				if !bytes.Equal(block[i:i+ww], block[i-ww:i]) {
					runs++
				}
			}
			long = runs <= len(block)/ww/minMeanRun+8
		}
		if ok != long {
			t.Fatalf("%d bytes of width %d: took it %v, runs long %v", len(src), ww, ok, long)
		}
		if !ok {
			return
		}
		got, err := d.DecodeAll(frame, nil)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%d bytes of width %d: decoded %d, error %v", len(src), ww, len(got), err)
		}
	})
}

// BenchmarkDecodeRuns decodes a batch's tid column (32Ki 4-byte rows) in
// runs of 1 to 64 rows of a few threads, and its cpu column (2-byte rows)
// in runs of 1 to 128, as klauspost's encoder writes them at the
// writer's level and as RunEncoder does: what a verb that reads the
// column pays a batch.
func BenchmarkDecodeRuns(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	enc := writerEncoder(b)
	d := readerDecoder(b)
	for _, col := range []struct {
		name   string
		w, run int
	}{{"tid", 4, 64}, {"cpu", 2, 128}} {
		src := inRuns(r, col.w, 32<<10, col.run)
		var e RunEncoder
		ours, _ := e.Append(nil, src, col.w)
		dst := make([]byte, 0, len(src)+16)
		for _, c := range []struct {
			name  string
			frame []byte
		}{{"klauspost", enc.EncodeAll(src, nil)}, {"RunEncoder", ours}} {
			b.Run(fmt.Sprintf("%s/%s-%dB", col.name, c.name, len(c.frame)), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for range b.N {
					if _, err := d.DecodeAll(c.frame, dst[:0]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)/col.w), "ns/row")
			})
		}
	}
}

// BenchmarkEncodeRuns writes the tid column of BenchmarkDecodeRuns with
// klauspost's encoder and with RunEncoder: what the recorder pays.
func BenchmarkEncodeRuns(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	src := inRuns(r, 4, 32<<10, 64)
	enc := writerEncoder(b)
	var e RunEncoder
	dst := make([]byte, 0, len(src))
	b.Run("klauspost", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for range b.N {
			dst = enc.EncodeAll(src, dst[:0])
		}
	})
	b.Run("RunEncoder", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for range b.N {
			dst, _ = e.Append(dst[:0], src, 4)
		}
	})
}
