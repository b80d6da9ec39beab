package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// msgInfo is where one message of a capture is, found with the checked
// flatbuffer reader.
type msgInfo struct {
	off, metaLen, body int64 // message start, metadata length (after the 8-byte prefix), body start
	bodyLen            int64
	typ                int
	bodySlot           int // file offset of the bodyLength field, -1 if absent
	bufs               []bufInfo
	variadic           int // file offset of the variadic counts vector, -1 if absent
}

type bufInfo struct{ at, off, length int64 } // at: file offset of the Buffer struct

// walkMessages lists the messages of the stream part of a capture.
func walkMessages(t *testing.T, data []byte) []msgInfo {
	t.Helper()
	var msgs []msgInfo
	off := int64(8)
	for off+8 <= int64(len(data)) {
		if binary.LittleEndian.Uint32(data[off:]) != contToken {
			t.Fatalf("no message at %d", off)
		}
		ml := int64(binary.LittleEndian.Uint32(data[off+4:]))
		if ml == 0 {
			break
		}
		meta := data[off+8 : off+8+ml]
		hdr, typ, bodyLen, err := parseMessage(meta)
		if err != nil {
			t.Fatalf("message at %d: %v", off, err)
		}
		m := msgInfo{off: off, metaLen: ml, body: off + 8 + ml, bodyLen: bodyLen, typ: typ, bodySlot: -1, variadic: -1}
		root, _ := fbRoot(meta)
		if p, _ := root.slot(3, 8); p >= 0 {
			m.bodySlot = int(off + 8 + int64(p))
		}
		batch := hdr
		if typ == hdrDictionary {
			batch, _, _ = hdr.table(1)
		}
		if typ != hdrSchema {
			start, n, _ := batch.vector(2, 16)
			for j := 0; j < n; j++ {
				p := start + 16*j
				m.bufs = append(m.bufs, bufInfo{at: off + 8 + int64(p), off: i64At(meta, p), length: i64At(meta, p+8)})
			}
			if start, n, _ := batch.vector(4, 8); n > 0 {
				m.variadic = int(off + 8 + int64(start))
			}
		}
		msgs = append(msgs, m)
		off = m.body + bodyLen
	}
	return msgs
}

// largestRecord returns the record batch message with the largest body.
func largestRecord(msgs []msgInfo) msgInfo {
	var best msgInfo
	for _, m := range msgs {
		if m.typ == hdrRecord && m.bodyLen > best.bodyLen {
			best = m
		}
	}
	return best
}

// patchBlock sets the metadata and body lengths (unless -1) of the footer
// block of the message at off.
func patchBlock(t *testing.T, d []byte, off int64, meta, body int64) {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(d[len(d)-10:]))
	buf := d[len(d)-10-n : len(d)-10]
	root, err := fbRoot(buf)
	if err != nil {
		t.Fatal(err)
	}
	start, nrec, _ := root.vector(3, 24)
	for i := 0; i < nrec; i++ {
		p := start + 24*i
		if i64At(buf, p) != off {
			continue
		}
		if meta >= 0 {
			binary.LittleEndian.PutUint32(buf[p+8:], uint32(meta))
		}
		if body >= 0 {
			binary.LittleEndian.PutUint64(buf[p+16:], uint64(body))
		}
		return
	}
	t.Fatalf("no footer block at %d", off)
}

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

// bombFrame is a zstd frame that decompresses to n zero bytes in RLE blocks
// of 128 KiB: a few bytes a block.
func bombFrame(n int) []byte {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	defer enc.Close()
	return enc.EncodeAll(make([]byte, n), nil)
}

// windowFrame is a zstd frame that declares a 1 GiB window and holds one byte.
func windowFrame() []byte {
	// magic, descriptor (no single segment, no checksum, no FCS), window
	// descriptor (windowLog 30), one last RLE block of 1 byte: 0.
	bh := 1 | 1<<1 | 1<<3
	return []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (30 - 10) << 3, byte(bh), byte(bh >> 8), byte(bh >> 16), 0}
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
		for _, b := range m.bufs {
			if b.length > best.length {
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
			binary.LittleEndian.PutUint32(d[m.off+4:], 1<<30)
			patchBlock(t, d, m.off, 1<<30+8, -1)
			return d
		}, true},
		{"message body 1 TiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, int64(m.bodySlot), 1<<40)
			patchBlock(t, d, m.off, -1, 1<<40)
			return d
		}, true},
		{"uncompressed buffer 1 TiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, m.body+largestBuf(m).off, 1<<40)
			return d
		}, true},
		{"uncompressed buffer 2^64-2", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, m.body+largestBuf(m).off, 1<<64-2)
			return d
		}, true},
		{"decompression bomb 300 MiB", big, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			b := largestBuf(m)
			frame := bombFrame(300 << 20)
			if int64(len(frame)) > b.length-8 {
				t.Fatalf("bomb of %d bytes does not fit a buffer of %d", len(frame), b.length)
			}
			put64(d, m.body+b.off, 300<<20)
			copy(d[m.body+b.off+8:], frame)
			return d
		}, true},
		{"zstd window 1 GiB", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			b := largestBuf(m)
			put64(d, m.body+b.off, 1)
			copy(d[m.body+b.off+8:], windowFrame())
			return d
		}, true},
		{"buffer outside its body", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			m := firstRecord(msgs)
			put64(d, largestBuf(m).at+8, 1<<40)
			return d
		}, false},
		{"variadic count 2^40", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			for _, m := range msgs {
				if m.variadic >= 0 {
					put64(d, int64(m.variadic), 1<<40)
					return d
				}
			}
			t.Fatal("no variadic counts")
			return d
		}, false},
		{"schema fields 2^31", small, func(t *testing.T, d []byte, msgs []msgInfo) []byte {
			meta := d[msgs[0].off+8 : msgs[0].body]
			root, _ := fbRoot(meta)
			s, _, _ := root.table(2)
			p, _ := s.ref(1)
			binary.LittleEndian.PutUint32(meta[p:], 1<<31)
			// and the footer's copy
			n := int(binary.LittleEndian.Uint32(d[len(d)-10:]))
			buf := d[len(d)-10-n : len(d)-10]
			root, _ = fbRoot(buf)
			s, _, _ = root.table(1)
			p, _ = s.ref(1)
			binary.LittleEndian.PutUint32(buf[p:], 1<<31)
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

// TestLimitsAcceptCaptures: the checks pass what bpftape and Arrow Go write,
// complete (read through the footer) and cut (read as a stream).
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
			t.Errorf("%s repaired by Arrow Go's writer: recovered %v, %d rows", comp, r.Recovered, len(rows))
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
	for _, x := range m.bufs {
		if x.length > b.length {
			b = x
		}
	}
	frame := bombFrame(64 << 20)
	binary.LittleEndian.PutUint64(d[m.body+b.off:], 64<<20)
	copy(d[m.body+b.off+8:], frame)
	// A skippable frame fills the rest of the buffer.
	skip := d[m.body+b.off+8+int64(len(frame)) : m.body+b.off+b.length]
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
