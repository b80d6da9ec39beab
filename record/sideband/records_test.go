package sideband

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"
)

// rec builds a raw record of type typ with body after the header and a
// sample_id of pid, tid and time t; the size is padded to 8 bytes.
func rec(typ uint32, misc uint16, body []byte, pid, tid uint32, t uint64) []byte {
	for len(body)%8 != 0 {
		body = append(body, 0)
	}
	raw := make([]byte, headerSize, headerSize+len(body)+sampleIDSize)
	raw = append(raw, body...)
	raw = binary.NativeEndian.AppendUint32(raw, pid)
	raw = binary.NativeEndian.AppendUint32(raw, tid)
	raw = binary.NativeEndian.AppendUint64(raw, t)
	binary.NativeEndian.PutUint32(raw[0:], typ)
	binary.NativeEndian.PutUint16(raw[4:], misc)
	binary.NativeEndian.PutUint16(raw[6:], uint16(len(raw)))
	return raw
}

func u32s(b []byte, vs ...uint32) []byte {
	for _, v := range vs {
		b = binary.NativeEndian.AppendUint32(b, v)
	}
	return b
}

func u64s(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = binary.NativeEndian.AppendUint64(b, v)
	}
	return b
}

// mmap2 builds an MMAP2 record; a build id replaces maj, min and ino.
func mmap2(pid uint32, t, start, length, pgoff uint64, maj, min uint32, ino uint64, buildID []byte, path string) []byte {
	b := u32s(nil, pid, pid+1)
	b = u64s(b, start, length, pgoff)
	var misc uint16
	if buildID != nil {
		misc = miscMmapBuildID
		id := make([]byte, 24)
		id[0] = byte(len(buildID))
		copy(id[4:], buildID)
		b = append(b, id...)
	} else {
		b = u32s(b, maj, min)
		b = u64s(b, ino, 0)
	}
	b = u32s(b, 5, 2) // PROT_READ|PROT_EXEC, MAP_PRIVATE
	b = append(b, path...)
	b = append(b, 0)
	return rec(recordMmap2, misc|2, b, pid, pid+1, t)
}

func comm(pid uint32, t uint64, exec bool, name string) []byte {
	var misc uint16
	if exec {
		misc = miscCommExec
	}
	return rec(recordComm, misc, append(u32s(nil, pid, pid), name+"\x00"...), pid, pid, t)
}

func task(typ uint32, pid, ppid, tid uint32, t uint64) []byte {
	return rec(typ, 0, u64s(u32s(nil, pid, ppid, tid, tid), t), pid, tid, t)
}

// TestParse decodes every kind of record, and drops what is not wanted.
func TestParse(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, tc := range []struct {
		name string
		raw  []byte
		want *Record
	}{
		{"mmap2 with device and inode", mmap2(42, 1000, 0x400000, 0x2000, 0x1000, 0xfd, 1, 12345, nil, "/usr/bin/chain"),
			&Record{Kind: Mmap, Time: 1000, PID: 42, TID: 43, Start: 0x400000, Len: 0x2000, Pgoff: 0x1000, Maj: 0xfd, Min: 1, Ino: 12345,
				Prot: 5, Path: "/usr/bin/chain"}},
		{"mmap2 with a build id", mmap2(42, 1001, 0x7f0000, 0x1000, 0, 0, 0, 0, id, "/lib/libc.so.6"),
			&Record{Kind: Mmap, Time: 1001, PID: 42, TID: 43, Start: 0x7f0000, Len: 0x1000, Prot: 5,
				BuildID: "deadbeef0102030405060708090a0b0c0d0e0f10", Path: "/lib/libc.so.6"}},
		{"mmap2 with a build id of 40 bytes", func() []byte {
			r := mmap2(42, 1001, 0x7f0000, 0x1000, 0, 0, 0, 0, id, "x")
			r[40] = 40 // more than the 20 there are: 20 taken
			return r
		}(), &Record{Kind: Mmap, Time: 1001, PID: 42, TID: 43, Start: 0x7f0000, Len: 0x1000, Prot: 5,
			BuildID: "deadbeef0102030405060708090a0b0c0d0e0f10", Path: "x"}},
		{"exec", comm(7, 5, true, "chain"), &Record{Kind: Exec, Time: 5, PID: 7, TID: 7}},
		{"a rename is no exec", comm(7, 5, false, "worker"), nil},
		{"fork of a process", task(recordFork, 8, 7, 8, 6), &Record{Kind: Fork, Time: 6, PID: 8, PPID: 7, TID: 8}},
		{"a new thread is no fork", task(recordFork, 7, 7, 9, 6), nil},
		{"exit", task(recordExit, 8, 7, 8, 9), &Record{Kind: Exit, Time: 9, PID: 8, PPID: 7, TID: 8}},
		{"a thread's exit is none", task(recordExit, 8, 8, 10, 9), nil},
		{"lost", rec(recordLost, 0, u64s(nil, 1, 17), 0, 0, 11), &Record{Kind: Lost, Time: 11, Lost: 17}},
		{"an old MMAP record", rec(recordMmap, 0, make([]byte, 40), 1, 1, 1), nil},
		{"mmap2 cut short", rec(recordMmap2, 0, make([]byte, 40), 1, 1, 1), nil},
		{"exit cut short", rec(recordExit, 0, make([]byte, 8), 1, 1, 1), nil},
		{"size unlike the record's", func() []byte {
			r := comm(7, 5, true, "chain")
			binary.NativeEndian.PutUint16(r[6:], 8)
			return r
		}(), nil},
		{"nothing", nil, nil},
	} {
		var p parser
		var got Record
		ok := p.parse(tc.raw, &got)
		if ok != (tc.want != nil) || ok && !reflect.DeepEqual(got, *tc.want) {
			t.Errorf("%s: ok %v, %+v; want %+v", tc.name, ok, got, tc.want)
		}
	}
}

// TestRingRecords reads records out of hand-built rings: in order, one
// wrapping around the end (header and body both split), then a record
// whose size cannot be, and heads and tails the ring cannot hold.
func TestRingRecords(t *testing.T) {
	recs := [][]byte{
		comm(1, 10, true, "a"),
		mmap2(1, 11, 0x1000, 0x1000, 0, 1, 2, 3, nil, "/bin/a"),
		task(recordFork, 2, 1, 2, 12),
		comm(2, 13, true, "bb"),
		task(recordExit, 2, 1, 2, 14),
	}
	var want []Record
	for _, raw := range recs {
		var p parser
		var r Record
		if !p.parse(raw, &r) {
			t.Fatalf("record %x does not parse", raw)
		}
		want = append(want, r)
	}
	for _, size := range []uint64{256, 512} {
		// Start at every 8-byte position, so that the wrap falls in every
		// place of the records, header included; tails past 2^32 too.
		for _, base := range []uint64{0, 1 << 33} {
			for start := uint64(0); start < size; start += 8 {
				data := make([]byte, size)
				pos := base + start
				tail := pos
				for _, raw := range recs {
					for i, c := range raw {
						data[(pos+uint64(i))%size] = c
					}
					pos += uint64(len(raw))
				}
				if pos-tail > size {
					continue
				}
				var got []Record
				var p parser
				_, bad := ringRecords(data, tail, pos, nil, func(raw []byte) {
					var r Record
					if p.parse(raw, &r) {
						got = append(got, r)
					}
				})
				if bad || !reflect.DeepEqual(got, want) {
					t.Fatalf("ring of %d, tail %d: bad %v, %+v; want %+v", size, tail, bad, got, want)
				}
			}
		}
	}

	// A size of 0 (which would never end), one below a header, one past
	// head: the reading stops, what came before is read.
	for _, n := range []uint16{0, 4, 7, 4096} {
		data := make([]byte, 256)
		first := comm(1, 10, true, "a")
		copy(data, first)
		binary.NativeEndian.PutUint16(data[len(first)+6:], n)
		var got int
		_, bad := ringRecords(data, 0, uint64(len(first))+64, nil, func([]byte) { got++ })
		if !bad || got != 1 {
			t.Errorf("size %d after a record: bad %v, %d records; want bad and 1", n, bad, got)
		}
	}
	for _, tc := range []struct{ tail, head uint64 }{{0, 257}, {10, 5}, {0, 3}} {
		if _, bad := ringRecords(make([]byte, 256), tc.tail, tc.head, nil, func([]byte) { t.Error("a record out of nothing") }); !bad {
			t.Errorf("tail %d head %d: not bad", tc.tail, tc.head)
		}
	}
}

// TestGarbage feeds rings of random bytes, and random cuts of real
// records, to the reader and the parser: nothing panics or reads past the
// ring.
func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	real := mmap2(1, 11, 0x1000, 0x1000, 0, 1, 2, 3, []byte{1, 2, 3}, "/bin/a")
	for range 20000 {
		data := make([]byte, 1<<(6+rng.IntN(4)))
		if rng.IntN(2) == 0 {
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
		} else {
			// A real record, cut and scrambled in one place.
			for i := range data {
				data[i] = real[i%len(real)]
			}
			data[rng.IntN(len(data))] = byte(rng.Uint32())
		}
		tail := rng.Uint64N(1 << 40)
		head := tail + rng.Uint64N(uint64(len(data))+1)
		var p parser
		ringRecords(data, tail, head, nil, func(raw []byte) {
			var r Record
			p.parse(raw, &r)
		})
		cut := real[:rng.IntN(len(real)+1)]
		var r Record
		p.parse(cut, &r)
	}
}

// FuzzParse: any bytes parse or not, without a panic.
func FuzzParse(f *testing.F) {
	f.Add(mmap2(1, 11, 0x1000, 0x1000, 0, 1, 2, 3, nil, "/bin/a"))
	f.Add(mmap2(1, 11, 0x1000, 0x1000, 0, 0, 0, 0, []byte{1, 2}, "/bin/a"))
	f.Add(comm(1, 10, true, "a"))
	f.Add(task(recordFork, 2, 1, 2, 12))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var p parser
		var r Record
		p.parse(raw, &r)
		ring := make([]byte, 64)
		n := copy(ring, raw)
		ringRecords(ring, 40, 40+uint64(n), nil, func(b []byte) { p.parse(b, &r) })
	})
}
