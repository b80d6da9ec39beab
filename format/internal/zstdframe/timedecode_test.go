package zstdframe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// decodeTime is TimeDecoder.Decode into a buffer with the room it needs,
// after a prefix that must stay as it was.
func decodeTime(d *TimeDecoder, frame []byte, want int) ([]byte, bool) {
	dst := append(make([]byte, 0, 3+want+16), "pre"...)
	out, ok := d.Decode(dst, frame, want)
	if ok && !bytes.Equal(out[:3], []byte("pre")) {
		panic("prefix overwritten")
	}
	return out[3:], ok
}

// TestTimeDecode decodes what Encode writes for time columns of many
// shapes and sizes (every block kind it writes: Huffman and raw literals,
// RLE and FSE tables, raw blocks) with TimeDecoder, which must take every
// one and give back the column.
func TestTimeDecode(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var e TimeEncoder
	var d TimeDecoder
	cases := timeCases(r, 1, 50, 2000, 7000, 1e6, 1e9)
	cases["jumps"] = func() []byte {
		var b []byte
		for i := range 5000 {
			b = binary.LittleEndian.AppendUint64(b, uint64(i)<<uint(8*(i%7)))
		}
		return b
	}()
	for name, src := range cases {
		frame := e.Encode(nil, src)
		got, ok := decodeTime(&d, frame, len(src))
		if !ok {
			t.Errorf("%s: TimeDecoder refused the frame Encode wrote", name)
			continue
		}
		if !bytes.Equal(got, src) {
			t.Errorf("%s: %d bytes decoded, not the %d encoded", name, len(got), len(src))
		}
		if _, ok := decodeTime(&d, frame, len(src)+1); ok && len(src) > 0 {
			t.Errorf("%s: decoded to a length other than the frame's", name)
		}
		// Too little room: refused, not written past.
		if _, ok := d.Decode(make([]byte, 0, len(src)+15), frame, len(src)); ok {
			t.Errorf("%s: decoded into a buffer without 16 bytes to spare", name)
		}
	}
}

// TestTimeDecodeOthers: frames klauspost's encoder writes (repeated and
// predefined tables, matches anywhere) are decoded exactly or refused.
func TestTimeDecodeOthers(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	var d TimeDecoder
	took := 0
	for _, l := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
		for _, crc := range []bool{true, false} {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderCRC(crc), zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			for _, src := range [][]byte{
				timeColumn(r, 20000, 1e13, 2000),
				bytes.Repeat([]byte("abcdefgh"), 1000),
				[]byte("x"),
				timeColumn(r, 300, 1e13, 50),
			} {
				frame := enc.EncodeAll(src, nil)
				got, ok := decodeTime(&d, frame, len(src))
				if ok {
					took++
					if !bytes.Equal(got, src) {
						t.Errorf("level %v, %d bytes: decoded wrong", l, len(src))
					}
				}
			}
		}
	}
	t.Logf("%d of klauspost's frames decoded, the others refused", took)
}

// TestTimeDecodeCorrupt changes bytes of Encode's frames, one to four at a
// time, thousands of times: whatever TimeDecoder takes, klauspost's
// decoder must decode to the same bytes, without an error.
func TestTimeDecodeCorrupt(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	var e TimeEncoder
	var d TimeDecoder
	kd := klauspostDecoder(t)
	took, tries := 0, 0
	for _, mean := range []float64{50, 2000, 1e6} {
		src := timeColumn(r, 3000, 1e13, mean)
		frame := e.Encode(nil, src)
		for range 3000 {
			bad := bytes.Clone(frame)
			for range 1 + r.Intn(4) {
				i := r.Intn(len(bad))
				if r.Intn(2) == 0 {
					bad[i] ^= 1 << r.Intn(8)
				} else {
					bad[i] = byte(r.Intn(256))
				}
			}
			tries++
			if checkAgainstKlauspost(t, &d, kd, bad, len(src)) {
				took++
			}
		}
	}
	t.Logf("%d of %d corrupted frames decoded (their checksums held)", took, tries)
}

// klauspostDecoder is klauspost's decoder, closed at the end of the test.
func klauspostDecoder(t testing.TB) *zstd.Decoder {
	kd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kd.Close)
	return kd
}

// checkAgainstKlauspost decodes frame with d and, when d takes it, with
// kd, which must agree; it reports whether d took it.
func checkAgainstKlauspost(t *testing.T, d *TimeDecoder, kd *zstd.Decoder, frame []byte, want int) bool {
	t.Helper()
	got, ok := decodeTime(d, frame, want)
	if !ok {
		return false
	}
	ref, err := kd.DecodeAll(frame, nil)
	if err != nil {
		t.Fatalf("TimeDecoder decoded %d bytes where klauspost's decoder says: %v", len(got), err)
	}
	if !bytes.Equal(got, ref) {
		t.Fatalf("TimeDecoder decoded %d bytes, klauspost's decoder %d other ones", len(got), len(ref))
	}
	return true
}

// FuzzTimeDecode: any bytes, and frames Encode wrote of the fuzzer's
// gaps, taken or not as klauspost's decoder says.
func FuzzTimeDecode(f *testing.F) {
	var e TimeEncoder
	r := rand.New(rand.NewSource(6))
	for _, mean := range []float64{50, 7000} {
		f.Add(e.Encode(nil, timeColumn(r, 200, 1e13, mean)), uint16(1600))
	}
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x24, 0, 1, 0, 0, 0, 0, 0, 0}, uint16(0))
	kd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	var d TimeDecoder
	f.Fuzz(func(t *testing.T, frame []byte, want uint16) {
		checkAgainstKlauspost(t, &d, kd, frame, int(want))
		if len(frame) > 0 {
			// The frame Encode makes of the bytes as gaps.
			src := make([]byte, 0, 8*len(frame))
			v := int64(want) << 30
			for _, g := range frame {
				v += int64(g) << (g % 24)
				src = binary.LittleEndian.AppendUint64(src, uint64(v))
			}
			got, ok := decodeTime(&d, e.Encode(nil, src), len(src))
			if !ok || !bytes.Equal(got, src) {
				t.Fatalf("Encode's frame of %d values: decoded %v, equal %v", len(src)/8, ok, bytes.Equal(got, src))
			}
		}
	})
}

// BenchmarkTimeDecode sets TimeDecoder against klauspost's decoder on a
// batch's time column, 32Ki values, as Encode writes it:
//
//	go test -run '^$' -bench TimeDecode ./format/internal/zstdframe/
func BenchmarkTimeDecode(b *testing.B) {
	kd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer kd.Close()
	var e TimeEncoder
	var d TimeDecoder
	for _, mean := range []float64{300, 2000, 7000} {
		src := timeColumn(rand.New(rand.NewSource(2)), 32<<10, 1e13, mean)
		frame := e.Encode(nil, src)
		dst := make([]byte, 0, len(src)+16)
		for _, dec := range []struct {
			name string
			fn   func() ([]byte, bool)
		}{
			{"zstdtime", func() ([]byte, bool) { return d.Decode(dst, frame, len(src)) }},
			{"klauspost", func() ([]byte, bool) { out, err := kd.DecodeAll(frame, dst); return out, err == nil }},
		} {
			b.Run(fmt.Sprintf("gap=%gns/%s", mean, dec.name), func(b *testing.B) {
				for b.Loop() {
					if out, ok := dec.fn(); !ok || len(out) != len(src) {
						b.Fatal("not decoded")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)/8), "ns/value")
			})
		}
	}
}

// TestTimeDecodeBitstream garbles the sequence bitstream of one-block
// frames (the bytes before the checksum), whose states then read codes
// with extra bits and run the stream out before its sequences: refused,
// or decoded as klauspost's decoder decodes them, never read past.
func TestTimeDecodeBitstream(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var e TimeEncoder
	var d TimeDecoder
	kd := klauspostDecoder(t)
	for _, n := range []int{40, 1000, 10000} {
		src := timeColumn(r, n, 1e13, 2000)
		frame := e.Encode(nil, src)
		tail := min(len(frame)-4-20, n/3)
		for range 2000 {
			bad := bytes.Clone(frame)
			for range 1 + r.Intn(8) {
				bad[len(bad)-5-r.Intn(tail)] = byte(r.Intn(256))
			}
			if r.Intn(4) == 0 {
				bad[len(bad)-5] |= 0x80 // a longer stream
			}
			checkAgainstKlauspost(t, &d, kd, bad, len(src))
		}
	}
}
