package format

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
