package record

import "github.com/bpftape/bpftape/bpf"

// maxComms bounds the comm table: when it holds this many threads, it
// starts a new generation and asks the programs to send every comm again.
const maxComms = 1 << 16

// commEntry is the comm of one thread, NUL padding dropped.
type commEntry struct {
	b [bpf.CommLen]byte
	n uint8
}

func (e *commEntry) bytes() []byte { return e.b[:e.n] }

// commTable maps thread ids to the comm of their last comm record: samples
// carry no comm of their own (see bpf.CommProbeID). It keeps two
// generations, so that samples already in the ring when it forgot the older
// one still find their comm.
type commTable struct {
	cur, prev map[uint32]*commEntry
	lastTID   uint32
	last      *commEntry
	forget    func() error // makes the programs send every comm again
}

func newCommTable(forget func() error) *commTable {
	return &commTable{cur: make(map[uint32]*commEntry), forget: forget}
}

// set records comm as thread tid's comm from now on.
func (t *commTable) set(tid uint32, comm []byte) error {
	e := t.cur[tid]
	if e == nil {
		if len(t.cur) >= maxComms {
			t.prev, t.cur = t.cur, make(map[uint32]*commEntry, maxComms)
			if t.forget != nil {
				if err := t.forget(); err != nil {
					return err
				}
			}
		}
		e = new(commEntry)
		t.cur[tid] = e
	}
	e.n = uint8(copy(e.b[:], comm))
	t.lastTID, t.last = tid, e
	return nil
}

// get returns thread tid's comm, or nil if no comm record named it.
func (t *commTable) get(tid uint32) []byte {
	if t.last != nil && tid == t.lastTID {
		return t.last.bytes()
	}
	e := t.cur[tid]
	if e == nil {
		if e = t.prev[tid]; e == nil {
			return nil
		}
	}
	t.lastTID, t.last = tid, e
	return e.bytes()
}
