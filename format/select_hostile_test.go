package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSelectHostile patches the buffers an analysis of a few columns reads
// (time), to declare too much, and wants a clear error having allocated
// little, with batches decoded ahead as the analyses decode them.
func TestSelectHostile(t *testing.T) {
	dir := t.TempDir()
	big := writeCapture(t, Zstd, 20000, 1<<20) // time is random: stored, room for a bomb
	small := writeCapture(t, Zstd, 50, 1<<20)
	put64 := func(data []byte, at int64, v uint64) { binary.LittleEndian.PutUint64(data[at:], v) }
	timeBuf := func(m msgInfo) bufInfo { return m.Buffers[1] }
	cases := []struct {
		name  string
		base  []byte
		patch func(d []byte, m msgInfo)
		limit bool
	}{
		{"uncompressed buffer 1 TiB", small, func(d []byte, m msgInfo) { put64(d, m.Body+timeBuf(m).Off, 1<<40) }, true},
		{"uncompressed buffer 2^64-2", small, func(d []byte, m msgInfo) { put64(d, m.Body+timeBuf(m).Off, 1<<64-2) }, true},
		// The frame states its size: refused before 200 MiB are allocated.
		{"uncompressed buffers 200+200 MiB", small, func(d []byte, m msgInfo) {
			put64(d, m.Body+timeBuf(m).Off, 200<<20)
			put64(d, m.Body+m.Buffers[3].Off, 200<<20)
		}, false},
		{"decompression bomb 300 MiB", big, func(d []byte, m msgInfo) {
			b := timeBuf(m)
			frame := bombFrame(300 << 20)
			put64(d, m.Body+b.Off, 300<<20)
			copy(d[m.Body+b.Off+8:], frame)
		}, true},
		{"frame longer than declared", big, func(d []byte, m msgInfo) {
			b := timeBuf(m)
			frame := bombFrame(20 << 20)
			put64(d, m.Body+b.Off, 1<<20)
			copy(d[m.Body+b.Off+8:], frame)
		}, false},
		{"zstd window 1 GiB", small, func(d []byte, m msgInfo) {
			b := timeBuf(m)
			put64(d, m.Body+b.Off, 1)
			copy(d[m.Body+b.Off+8:], windowFrame())
		}, true},
		{"buffer outside its body", small, func(d []byte, m msgInfo) { put64(d, timeBuf(m).At+8, 1<<40) }, false},
		{"values shorter than the rows", small, func(d []byte, m msgInfo) { put64(d, timeBuf(m).At+8, 0) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(tc.base)
			tc.patch(data, largestRecord(walkMessages(t, data)))
			path := filepath.Join(dir, "hostile.arrow")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := readSelected(path)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%v (allocated %s)", err, sizeStr(alloc))
			if err == nil {
				t.Fatal("read without error")
			}
			if tc.limit && !errors.Is(err, ErrLimit) {
				t.Errorf("error %q does not wrap ErrLimit", err)
			}
			if alloc > 32<<20 {
				t.Errorf("allocated %s reading a %s file", sizeStr(alloc), sizeStr(uint64(len(data))))
			}
		})
	}
}
