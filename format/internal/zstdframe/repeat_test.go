package zstdframe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// repeated is n bytes of pattern over and over.
func repeated(pattern []byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern[i%len(pattern)]
	}
	return b
}

// TestRepeat decodes, with klauspost's decoder as the capture reader sets
// it (the content size and checksum checked, the output bounded by the
// declared size), what AppendRepeat wrote for buffers of every period that
// divides RepeatPeriod and of sizes about the block boundaries, where the
// last block may be too short for a match; and checks the buffers it
// refuses.
func TestRepeat(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	d := readerDecoder(t)
	sizes := []int{minRepeat, minRepeat + 1, 1000, 32 << 10 * 4, blockMax - 1, blockMax, blockMax + 1, blockMax + 2,
		blockMax + 3, blockMax + RepeatPeriod, 2*blockMax + 1, 3*blockMax + 2, 32573 * 8}
	prefix := []byte("prefix")
	for _, period := range []int{1, 2, 4, 8, 16, 32, 64} {
		pattern := make([]byte, period)
		r.Read(pattern)
		for _, n := range sizes {
			src := repeated(pattern, n)
			frame, ok := AppendRepeat(bytes.Clone(prefix), src)
			if !ok {
				t.Errorf("period %d, %d bytes: refused", period, n)
				continue
			}
			if !bytes.HasPrefix(frame, prefix) {
				t.Fatalf("period %d, %d bytes: the frame overwrote dst", period, n)
			}
			frame = frame[len(prefix):]
			if blocks := (n + blockMax - 1) / blockMax; len(frame) > 100+12*blocks {
				t.Errorf("period %d, %d bytes: a frame of %d bytes", period, n, len(frame))
			}
			got, err := d.DecodeAll(frame, make([]byte, 0, n+16))
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("period %d, %d bytes: decoded %d bytes, equal %v, error %v", period, n, len(got), bytes.Equal(got, src), err)
			}
			// A flipped byte of the literals fails the checksum.
			bad := bytes.Clone(frame)
			bad[len(bad)-30] ^= 1
			if _, err := d.DecodeAll(bad, make([]byte, 0, n+16)); err == nil && n < blockMax {
				t.Errorf("period %d, %d bytes: a corrupt frame decoded", period, n)
			}
		}
	}
	for name, src := range map[string][]byte{
		"short":         repeated([]byte{7}, minRepeat-1),
		"period 3":      repeated([]byte{1, 2, 3}, 4096),
		"period 127":    repeated(bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 16)[:127], 4096),
		"one changed":   append(repeated([]byte{1, 0, 0, 0}, 4092), 2, 0, 0, 0),
		"times":         binary.LittleEndian.AppendUint64(repeated([]byte{0}, 4096), 1),
		"random":        func() []byte { b := make([]byte, 4096); r.Read(b); return b }(),
		"first changed": append([]byte{9}, repeated([]byte{1}, 4095)...),
	} {
		if frame, ok := AppendRepeat(prefix, src); ok || !bytes.Equal(frame, prefix) {
			t.Errorf("%s: took a buffer that does not repeat every %d bytes (%v, %d bytes)", name, RepeatPeriod, ok, len(frame))
		}
	}
}

// FuzzRepeat checks AppendRepeat on buffers made of a pattern repeated,
// then perhaps changed in one byte: a frame it writes decodes to the
// buffer, and it refuses a buffer only when the buffer does not repeat.
func FuzzRepeat(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, uint32(1000), uint32(0), byte(0))
	f.Add([]byte{5}, uint32(blockMax+2), uint32(7), byte(1))
	f.Add(bytes.Repeat([]byte{1, 2}, 32), uint32(2*blockMax+65), uint32(0), byte(0))
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pattern []byte, n, at uint32, flip byte) {
		if len(pattern) == 0 || n > 3*blockMax {
			return
		}
		src := repeated(pattern, int(n))
		if len(src) > 0 {
			src[int(at)%len(src)] ^= flip
		}
		frame, ok := AppendRepeat(nil, src)
		repeats := len(src) >= minRepeat && bytes.Equal(src[RepeatPeriod:], src[:len(src)-RepeatPeriod])
		if ok != repeats {
			t.Fatalf("%d bytes: took it %v, repeats %v", len(src), ok, repeats)
		}
		if !ok {
			return
		}
		got, err := d.DecodeAll(frame, nil)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%d bytes: decoded %d, error %v", len(src), len(got), err)
		}
	})
}

// BenchmarkDecodeRepeat decodes a batch's constant 4-byte column (a
// thread's tid, 32Ki rows) as klauspost's encoder writes it, at the
// writer's level, and as AppendRepeat does: what a verb that reads the
// column pays a batch.
func BenchmarkDecodeRepeat(b *testing.B) {
	src := repeated([]byte{0x26, 0x1e, 0, 0}, 32<<10*4)
	enc := writerEncoder(b)
	theirs := enc.EncodeAll(src, nil)
	ours, _ := AppendRepeat(nil, src)
	d := readerDecoder(b)
	dst := make([]byte, 0, len(src)+16)
	for _, c := range []struct {
		name  string
		frame []byte
	}{{"klauspost", theirs}, {"AppendRepeat", ours}} {
		b.Run(fmt.Sprintf("%s-%dB", c.name, len(c.frame)), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for range b.N {
				if _, err := d.DecodeAll(c.frame, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)/4), "ns/row")
		})
	}
}
