package format

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bpftape/bpftape/format/internal/zstdframe"
)

// TestTimeColumnEncoders: the two encoders of the time column that
// bench/driver's reccpu part compares (zstdtime, the default, and
// klauspost's fastest level with BPFTAPE_BENCH_TIME_ZSTD=fastest) both
// write captures that read back whole, and the switch does change the
// frames.
func TestTimeColumnEncoders(t *testing.T) {
	var files [][]byte
	for i, v := range []string{"", "", "fastest"} {
		t.Run(fmt.Sprintf("%d/env=%s", i, v), func(t *testing.T) {
			t.Setenv("BPFTAPE_BENCH_TIME_ZSTD", v)
			path := filepath.Join(t.TempDir(), "c.arrow")
			want := writeRandom(t, path, Zstd, 20000, 8192)
			_, got := readAll(t, path)
			checkRows(t, testMeta(), got, want)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, b)
		})
	}
	switch {
	case len(files) != 3:
	case !bytes.Equal(files[0], files[1]):
		t.Log("two writes of the same rows differ: cannot tell the encoders apart by the file")
	case bytes.Equal(files[0], files[2]):
		t.Error("BPFTAPE_BENCH_TIME_ZSTD=fastest wrote the same file as zstdtime")
	}
}

// TestTimeColumnDecoder: the time column's frames that zstdtime writes are
// decoded by zstdframe.TimeDecoder, every one, to the times klauspost's
// decoder gives; those of klauspost's fastest level, which it may refuse,
// read back as well.
func TestTimeColumnDecoder(t *testing.T) {
	for _, v := range []string{"", "fastest"} {
		t.Run("env="+v, func(t *testing.T) {
			t.Setenv("BPFTAPE_BENCH_TIME_ZSTD", v)
			path := filepath.Join(t.TempDir(), "c.arrow")
			writeRandom(t, path, Zstd, 20000, 8192)
			fast, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Close()
			var td zstdframe.TimeDecoder
			took := 0
			fast.dec.SetValuesDecoder(ColTime, func(dst, src []byte, want int) ([]byte, bool) {
				out, ok := td.Decode(dst, src, want)
				if !ok {
					t.Logf("refused: %d bytes, want %d, cap %d", len(src), want, cap(dst)-len(dst))
				}
				if ok {
					took++
				}
				return out, ok
			})
			ref, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			ref.dec.SetValuesDecoder(ColTime, nil)
			// Every batch through the decoders set here.
			fast.ReadAhead, ref.ReadAhead = 0, 0
			// batches counts those with rows: an empty one (the
			// writer's first) has no frame.
			batches := 0
			for fast.Next() {
				if !ref.Next() {
					t.Fatal("fewer batches read with klauspost's decoder")
				}
				if fast.Batch().Len > 0 {
					batches++
				}
				if !slices.Equal(fast.Batch().Time, ref.Batch().Time) {
					t.Fatalf("batch %d: times differ between the two decoders", batches)
				}
			}
			if err := errors.Join(fast.Err(), ref.Err()); err != nil {
				t.Fatal(err)
			}
			if batches < 2 {
				t.Fatalf("%d batches", batches)
			}
			if v == "" && took != batches {
				t.Errorf("TimeDecoder took %d of %d batches' time frames", took, batches)
			}
			t.Logf("TimeDecoder took %d of %d batches' time frames", took, batches)
		})
	}
}
