package sideband

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
)

// Kind is what a Record tells.
type Kind uint8

// Kinds of Record.
const (
	// Mmap: process PID mapped [Start, Start+Len) of Path at file offset
	// Pgoff, executable.
	Mmap Kind = 1 + iota
	// Exec: process PID exec'd; its earlier mappings are gone.
	Exec
	// Fork: process PID started as a copy of process PPID, with its
	// mappings (a new thread is not a Fork).
	Fork
	// Exit: process PID's main thread exited.
	Exit
	// Lost: the kernel dropped Lost records for want of room in a ring.
	Lost
)

// A Record is one side-band record. Time is the boot clock (ns), as
// bpf_ktime_get_boot_ns stamps the capture's events.
type Record struct {
	Kind     Kind
	Time     int64
	PID, TID uint32
	PPID     uint32 // Fork: the parent process

	// Mmap: the mapping. Maj, Min and Ino identify its file when the
	// record carries no build id (BuildID, hex, is then "").
	Start, Len, Pgoff uint64
	Maj, Min          uint32
	Ino               uint64
	BuildID           string
	Prot              uint32
	Path              string

	Lost uint64 // Lost: how many records
}

// Record types and header bits (linux/perf_event.h).
const (
	recordMmap  = 1 // PERF_RECORD_MMAP
	recordLost  = 2
	recordComm  = 3
	recordExit  = 4
	recordFork  = 7
	recordMmap2 = 10

	miscCommExec    = 0x2000 // PERF_RECORD_MISC_COMM_EXEC
	miscMmapBuildID = 0x4000 // PERF_RECORD_MISC_MMAP_BUILD_ID
)

const (
	// headerSize is struct perf_event_header: type u32, misc u16, size u16.
	headerSize = 8
	// sampleIDSize is the struct sample_id that sample_id_all appends to
	// every record, with sample_type TID|TIME: pid u32, tid u32, time u64.
	sampleIDSize = 16
	// mmap2Fixed is the part of an MMAP2 record before its file name.
	mmap2Fixed = 72
	// maxPath bounds a path kept (the kernel's is at most PATH_MAX).
	maxPath = 4096
	// maxInterned bounds the strings a parser keeps to share.
	maxInterned = 4096
)

var ne = binary.NativeEndian

// parser turns raw records into Records, sharing the strings of paths and
// build ids that repeat (every process maps the same libraries).
type parser struct {
	paths map[string]string
	ids   map[string]string // by raw build id
}

// parse decodes raw, one record of exactly its header's size, into r. It
// reports false for a record of a kind not wanted (a thread's fork or
// exit, a rename that is no exec, another type) and for one too short for
// its type: raw may be anything.
func (p *parser) parse(raw []byte, r *Record) bool {
	if len(raw) < headerSize+sampleIDSize {
		return false
	}
	typ := ne.Uint32(raw[0:])
	misc := ne.Uint16(raw[4:])
	if int(ne.Uint16(raw[6:])) != len(raw) {
		return false
	}
	id := raw[len(raw)-sampleIDSize:]
	*r = Record{Time: int64(ne.Uint64(id[8:]))}
	body := raw[:len(raw)-sampleIDSize]
	switch typ {
	case recordMmap2:
		if len(body) < mmap2Fixed {
			return false
		}
		r.Kind = Mmap
		r.PID, r.TID = ne.Uint32(body[8:]), ne.Uint32(body[12:])
		r.Start, r.Len, r.Pgoff = ne.Uint64(body[16:]), ne.Uint64(body[24:]), ne.Uint64(body[32:])
		if misc&miscMmapBuildID != 0 {
			n := min(int(body[40]), 20)
			r.BuildID = p.buildID(body[44 : 44+n])
		} else {
			r.Maj, r.Min, r.Ino = ne.Uint32(body[40:]), ne.Uint32(body[44:]), ne.Uint64(body[48:])
		}
		r.Prot = ne.Uint32(body[64:])
		name := body[mmap2Fixed:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		r.Path = p.path(name[:min(len(name), maxPath)])
		return r.Len > 0
	case recordComm:
		if misc&miscCommExec == 0 || len(body) < 16 {
			return false
		}
		r.Kind = Exec
		r.PID, r.TID = ne.Uint32(body[8:]), ne.Uint32(body[12:])
		return true
	case recordFork, recordExit:
		if len(body) < 32 {
			return false
		}
		r.PID, r.PPID, r.TID = ne.Uint32(body[8:]), ne.Uint32(body[12:]), ne.Uint32(body[16:])
		r.Time = int64(ne.Uint64(body[24:]))
		if typ == recordFork {
			r.Kind = Fork
			return r.PID != r.PPID
		}
		r.Kind = Exit
		return r.PID == r.TID
	case recordLost:
		if len(body) < 24 {
			return false
		}
		r.Kind = Lost
		r.Lost = ne.Uint64(body[16:])
		return r.Lost > 0
	}
	return false
}

// path returns b as a string, shared with the last ones seen.
func (p *parser) path(b []byte) string {
	if s, ok := p.paths[string(b)]; ok {
		return s
	}
	if p.paths == nil || len(p.paths) >= maxInterned {
		p.paths = map[string]string{}
	}
	s := string(b)
	p.paths[s] = s
	return s
}

// buildID returns the hex of the raw build id b, shared likewise.
func (p *parser) buildID(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := p.ids[string(b)]; ok {
		return s
	}
	if p.ids == nil || len(p.ids) >= maxInterned {
		p.ids = map[string]string{}
	}
	s := hex.EncodeToString(b)
	p.ids[string(b)] = s
	return s
}

// ringRecords calls emit with each whole record of a ring's data between
// tail and head (byte counts that only grow, as the kernel's data_tail and
// data_head do; len(data) is a power of two), in order. A record that
// wraps around the end of data is copied into scratch, which it returns
// grown as needed; emit must not keep its argument. A header whose size
// cannot be (below a header, or past head), or a head further than the
// ring holds, ends the reading: what is left cannot be told apart, and
// bad is set. The caller then moves the tail to head.
func ringRecords(data []byte, tail, head uint64, scratch []byte, emit func([]byte)) (_ []byte, bad bool) {
	size := uint64(len(data))
	if size == 0 || size&(size-1) != 0 || head-tail > size || head < tail {
		return scratch, head != tail
	}
	var hdr [headerSize]byte
	for tail < head {
		if head-tail < headerSize {
			return scratch, true
		}
		copyOut(hdr[:], data, tail)
		n := uint64(ne.Uint16(hdr[6:]))
		if n < headerSize || n > head-tail {
			return scratch, true
		}
		off := tail & (size - 1)
		var raw []byte
		if off+n <= size {
			raw = data[off : off+n]
		} else {
			if uint64(cap(scratch)) < n {
				scratch = make([]byte, n)
			}
			raw = scratch[:n]
			copyOut(raw, data, tail)
		}
		emit(raw)
		tail += n
	}
	return scratch, false
}

// copyOut copies len(dst) bytes of the ring data from position pos,
// wrapping around its end.
func copyOut(dst, data []byte, pos uint64) {
	off := pos & uint64(len(data)-1)
	n := copy(dst, data[off:])
	copy(dst[n:], data)
}
