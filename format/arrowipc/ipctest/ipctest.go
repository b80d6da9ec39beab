// Package ipctest finds the messages and buffers of Arrow IPC files, so
// that tests can patch them into hostile files. It trusts its input: use it
// on files a writer made, before patching them.
package ipctest

import (
	"encoding/binary"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
)

// Message header types.
const (
	Schema     = 1
	Dictionary = 2
	Record     = 3
)

// Buffer is one entry of a batch's buffer list.
type Buffer struct {
	At          int64 // file offset of the Buffer struct (offset, then length)
	Off, Length int64 // where the buffer is in the body
}

// Message is where one message of a stream is.
type Message struct {
	Off      int64 // the message's start (its continuation marker)
	MetaLen  int64 // metadata length, after the 8-byte prefix
	Body     int64 // the body's file offset
	BodyLen  int64
	Type     int
	BodySlot int64 // file offset of the Message's bodyLength field, -1 if absent
	Buffers  []Buffer
	Variadic int64 // file offset of the variadic buffer counts, -1 if absent
	Fields   int64 // for a schema: file offset of its field vector's length
}

// slot is the vtable offset of field i.
func slot(i int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*i) }

func root(b []byte) flatbuffers.Table {
	return flatbuffers.Table{Bytes: b, Pos: flatbuffers.GetUOffsetT(b)}
}

// table returns the table in field i of t.
func table(t flatbuffers.Table, i int) (flatbuffers.Table, bool) {
	o := t.Offset(slot(i))
	if o == 0 {
		return flatbuffers.Table{}, false
	}
	return flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(t.Pos + flatbuffers.UOffsetT(o))}, true
}

// vector returns where the elements of the vector in field i of t start,
// and how many there are.
func vector(t flatbuffers.Table, i int) (start, n int) {
	o := t.Offset(slot(i))
	if o == 0 {
		return 0, 0
	}
	return int(t.Vector(flatbuffers.UOffsetT(o))), t.VectorLen(flatbuffers.UOffsetT(o))
}

// Messages lists the messages of the stream part of an IPC file (after its
// 8-byte magic), up to the end-of-stream marker.
func Messages(tb testing.TB, data []byte) []Message {
	tb.Helper()
	var msgs []Message
	off := int64(8)
	for off+8 <= int64(len(data)) {
		if binary.LittleEndian.Uint32(data[off:]) != 0xFFFFFFFF {
			tb.Fatalf("no message at %d", off)
		}
		ml := int64(binary.LittleEndian.Uint32(data[off+4:]))
		if ml == 0 {
			break
		}
		meta := data[off+8 : off+8+ml]
		m := Message{Off: off, MetaLen: ml, Body: off + 8 + ml, BodySlot: -1, Variadic: -1, Fields: -1}
		r := root(meta)
		m.Type = int(r.GetByteSlot(slot(1), 0))
		if o := r.Offset(slot(3)); o != 0 {
			m.BodySlot = off + 8 + int64(r.Pos) + int64(o)
			m.BodyLen = r.GetInt64(r.Pos + flatbuffers.UOffsetT(o))
		}
		hdr, _ := table(r, 2)
		switch m.Type {
		case Schema:
			start, _ := vector(hdr, 1)
			m.Fields = off + 8 + int64(start) - 4
		case Dictionary:
			hdr, _ = table(hdr, 1)
			fallthrough
		case Record:
			start, n := vector(hdr, 2)
			for j := 0; j < n; j++ {
				p := start + 16*j
				m.Buffers = append(m.Buffers, Buffer{At: off + 8 + int64(p),
					Off: int64(binary.LittleEndian.Uint64(meta[p:])), Length: int64(binary.LittleEndian.Uint64(meta[p+8:]))})
			}
			if start, n := vector(hdr, 4); n > 0 {
				m.Variadic = off + 8 + int64(start)
			}
		}
		msgs = append(msgs, m)
		off = m.Body + m.BodyLen
	}
	return msgs
}

// LargestRecord returns the record batch message with the largest body.
func LargestRecord(msgs []Message) Message {
	var best Message
	for _, m := range msgs {
		if m.Type == Record && m.BodyLen > best.BodyLen {
			best = m
		}
	}
	return best
}

// LargestBuffer returns the largest buffer of m.
func LargestBuffer(m Message) Buffer {
	var best Buffer
	for _, b := range m.Buffers {
		if b.Length > best.Length {
			best = b
		}
	}
	return best
}

// footer returns the footer of a complete file.
func footer(d []byte) []byte {
	n := int(binary.LittleEndian.Uint32(d[len(d)-10:]))
	return d[len(d)-10-n : len(d)-10]
}

// PatchBlock sets the metadata and body lengths (unless -1) of the footer
// block of the message at off.
func PatchBlock(tb testing.TB, d []byte, off int64, meta, body int64) {
	tb.Helper()
	buf := footer(d)
	start, nrec := vector(root(buf), 3)
	for i := 0; i < nrec; i++ {
		p := start + 24*i
		if int64(binary.LittleEndian.Uint64(buf[p:])) != off {
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
	tb.Fatalf("no footer block at %d", off)
}

// FooterFields returns the offset in d of the length of the field vector
// of the footer's schema.
func FooterFields(d []byte) int64 {
	buf := footer(d)
	s, _ := table(root(buf), 1)
	start, _ := vector(s, 1)
	return int64(len(d)-10-len(buf)) + int64(start) - 4
}

// BombFrame is a zstd frame that decompresses to n zero bytes in RLE blocks
// of 128 KiB: a few bytes a block.
func BombFrame(n int) []byte {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	defer enc.Close()
	return enc.EncodeAll(make([]byte, n), nil)
}

// WindowFrame is a zstd frame that declares a 1 GiB window and holds one byte.
func WindowFrame() []byte {
	// magic, descriptor (no single segment, no checksum, no FCS), window
	// descriptor (windowLog 30), one last RLE block of 1 byte: 0.
	bh := 1 | 1<<1 | 1<<3
	return []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (30 - 10) << 3, byte(bh), byte(bh >> 8), byte(bh >> 16), 0}
}
