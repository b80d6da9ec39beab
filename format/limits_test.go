package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bpftape/bpftape/format/arrowipc/ipctest"
)

type (
	msgInfo = ipctest.Message
	bufInfo = ipctest.Buffer
)

func walkMessages(t *testing.T, data []byte) []msgInfo { return ipctest.Messages(t, data) }

var (
	largestRecord = ipctest.LargestRecord
	patchBlock    = ipctest.PatchBlock
	bombFrame     = ipctest.BombFrame
	windowFrame   = ipctest.WindowFrame
)

// writeCapture writes n random rows with compression comp and returns the
// file's bytes.
func writeCapture(t testing.TB, comp Compression, n, batchRows int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.arrow")
	writeRandom(t, path, comp, n, batchRows)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readMeasured opens and reads path to the end, and returns the error that
// stopped it (Open's, Err or RecoverErr) and the bytes allocated meanwhile.
func readMeasured(path string) (err error, alloc uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	defer func() {
		runtime.ReadMemStats(&after)
		alloc = after.TotalAlloc - before.TotalAlloc
	}()
	r, err := Open(path)
	if err != nil {
		return err, 0
	}
	defer r.Close()
	for r.Next() {
	}
	if r.Err() != nil {
		return r.Err(), 0
	}
	return r.RecoverErr, 0
}

// TestHostileDeclarations patches captures to declare huge metadata,
// bodies, uncompressed buffers, zstd windows and counts, in complete files
// (read through the footer) and in footerless ones (read as a stream), and
// checks that each read fails with a clear error having allocated little:
// the limits are enforced before Arrow allocates from the lengths.
func TestHostileDeclarations(t *testing.T) {
	dir := t.TempDir()
	// One large batch of random values: its time buffer does not compress
	// and is stored, leaving room for a bomb frame inside it.
	big := writeCapture(t, Zstd, 20000, 1<<20)
	small := writeCapture(t, Zstd, 50, 1<<20)

	type patch func(t *testing.T, data []byte, msgs []msgInfo) []byte
	firstRecord := largestRecord
	// largestBuf returns the largest buffer of the first record batch.
	largestBuf := func(m msgInfo) bufInfo {
		var best bufInfo
		for _, b := range m.Buffers {
			if b.Length > best.Length {
				best = b
			}
		}
		return best
	}
	put64 := func(data []byte, at int64, v uint64) { binary.LittleEndian.PutUint64(data[at:], v) }
	cases := []struct {
		name  string
		base  []byte
		patch patch
		limit bool // the error must wrap ErrLimit
	}{
		{"message metadata 1 GiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			binary.LittleEndian.PutUint32(d[m.Off+4:], 1<<30)
			patchBlock(t, d, m.Off, 1<<30+8, -1)
			return d
		}, true},
		{"message body 1 TiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, int64(m.BodySlot), 1<<40)
			patchBlock(t, d, m.Off, -1, 1<<40)
			return d
		}, true},
		{"uncompressed buffer 1 TiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, m.Body+largestBuf(m).Off, 1<<40)
			return d
		}, true},
		{"uncompressed buffer 2^64-2", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, m.Body+largestBuf(m).Off, 1<<64-2)
			return d
		}, true},
		{"decompression bomb 300 MiB", big, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			b := largestBuf(m)
			frame := bombFrame(300 << 20)
			if int64(len(frame)) > b.Length-8 {
				t.Fatalf("bomb of %d bytes does not fit a buffer of %d", len(frame), b.Length)
			}
			put64(d, m.Body+b.Off, 300<<20)
			copy(d[m.Body+b.Off+8:], frame)
			return d
		}, true},
		{"zstd window 1 GiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			b := largestBuf(m)
			put64(d, m.Body+b.Off, 1)
			copy(d[m.Body+b.Off+8:], windowFrame())
			return d
		}, true},
		{"buffer outside its body", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, largestBuf(m).At+8, 1<<40)
			return d
		}, false},
		{"variadic count 2^40", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			for _, m := range msgs {
				if m.Variadic >= 0 {
					put64(d, int64(m.Variadic), 1<<40)
					return d
				}
			}
			t.Fatal("no variadic counts")
			return d
		}, false},
		{"schema fields 2^31", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			binary.LittleEndian.PutUint32(d[msgs[0].Fields:], 1<<31)
			binary.LittleEndian.PutUint32(d[ipctest.FooterFields(d):], 1<<31) // and the footer's copy
			return d
		}, false},
	}
	var worst uint64
	for _, tc := range cases {
		for _, mode := range []string{"footer", "stream"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				data := bytes.Clone(tc.base)
				data = tc.patch(t, data, walkMessages(t, data))
				if mode == "stream" {
					data = streamPart(data)
				}
				path := filepath.Join(dir, "hostile.arrow")
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				err, alloc := readMeasured(path)
				worst = max(worst, alloc)
				t.Logf("%s: %v (allocated %s)", mode, err, sizeStr(alloc))
				if err == nil {
					t.Fatal("read without error")
				}
				if tc.limit && !errors.Is(err, ErrLimit) {
					t.Errorf("error %q does not wrap ErrLimit", err)
				}
				if alloc > 16<<20 {
					t.Errorf("allocated %s reading a %s file", sizeStr(alloc), sizeStr(uint64(len(data))))
				}
			})
		}
	}
	t.Logf("most allocated reading a hostile file: %s", sizeStr(worst))
}

// TestLimitsAcceptCaptures: the checks pass what bpftape writes, complete
// (read through the footer) and cut (read as a stream). TestArrowOracle
// reads what Arrow Go's writer writes.
func TestLimitsAcceptCaptures(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{Zstd, LZ4, None} {
		data := writeCapture(t, comp, 3000, 700)
		path := filepath.Join(dir, string(comp)+".arrow")
		os.WriteFile(path, data, 0o600)
		r, rows := readAll(t, path)
		if r.Recovered || len(rows) != 3000 {
			t.Errorf("%s: recovered %v, %d rows", comp, r.Recovered, len(rows))
		}
		os.WriteFile(path, streamPart(data), 0o600)
		r, rows = readAll(t, path)
		if !r.Recovered || len(rows) != 3000 {
			t.Errorf("%s stream: recovered %v, %d rows", comp, r.Recovered, len(rows))
		}
		fixed := filepath.Join(dir, string(comp)+".fixed.arrow")
		if _, err := Repair(path, fixed); err != nil {
			t.Fatal(err)
		}
		r, rows = readAll(t, fixed)
		if r.Recovered || len(rows) != 3000 {
			t.Errorf("%s repaired: recovered %v, %d rows", comp, r.Recovered, len(rows))
		}
	}
}

// TestBombWithinLimit: a batch may declare up to MaxBatchBytes of buffers,
// and then costs about that much to read: a 64 MiB bomb in a column of
// 20000 rows is decompressed (Arrow reads the rows it needs from it).
func TestBombWithinLimit(t *testing.T) {
	big := writeCapture(t, Zstd, 20000, 1<<20)
	d := bytes.Clone(big)
	m := largestRecord(walkMessages(t, d))
	var b bufInfo
	for _, x := range m.Buffers {
		if x.Length > b.Length {
			b = x
		}
	}
	frame := bombFrame(64 << 20)
	binary.LittleEndian.PutUint64(d[m.Body+b.Off:], 64<<20)
	copy(d[m.Body+b.Off+8:], frame)
	// A skippable frame fills the rest of the buffer.
	skip := d[m.Body+b.Off+8+int64(len(frame)) : m.Body+b.Off+b.Length]
	copy(skip, []byte{0x50, 0x2a, 0x4d, 0x18})
	binary.LittleEndian.PutUint32(skip[4:], uint32(len(skip)-8))
	path := filepath.Join(t.TempDir(), "bomb.arrow")
	os.WriteFile(path, d, 0o600)
	err, alloc := readMeasured(path)
	t.Logf("64 MiB bomb: error %v, allocated %s", err, sizeStr(alloc))
	if alloc < 64<<20 || alloc > 64<<20+MaxMessageMeta+MaxZstdWindow {
		t.Errorf("allocated %s", sizeStr(alloc))
	}
}
