package zstdframe

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/klauspost/compress/huff0"
)

// TimeDecoder reads the frames TimeEncoder writes. Any zstd decoder reads
// them, and klauspost's does, at about 8.7 ns a time (a sequence each) on
// the 2-CPU VM: as much as everything else hist does per event. These
// frames use a small part of the format (a single segment with its size
// and checksum, no dictionary, raw or Huffman literals, FSE or RLE code
// tables of their own in every block), and a loop that knows it decodes a
// sequence in about 6.2 (BenchmarkTimeDecode; bench/README.md, "Reading
// the time column"). Decode refuses whatever else it meets, and its
// caller then decodes the frame with klauspost's decoder, which also says
// what is wrong with a corrupt one: Decode only ever answers with a
// frame's exact content, its checksum verified.
//
// A TimeDecoder may be reused, not shared between goroutines.
type TimeDecoder struct {
	ll, ml [1 << llMaxLog]fseEntry
	of     [1 << ofMaxLog]fseEntry
	// run is ll, of and ml packed for timeRun (packRun).
	run  [3][runStates]runEntry
	lits []byte // a block's literals, with 16 bytes to spare
	bits []byte // a block's sequence bitstream, padded at both ends
	huff *huff0.Scratch
}

// The most accurate FSE table of each code, and its largest code (RFC
// 8878 3.1.1.3.2.1.1, 4.1.1).
const (
	llMaxLog, ofMaxLog, mlMaxLog = 9, 8, 9
	llMaxSym, ofMaxSym, mlMaxSym = 35, 31, 52
)

// fseEntry is one state of an FSE decoding table: the code it decodes,
// and the next state, base plus the next nb bits; and what the code
// stands for, val plus the next vbits bits (set by bake), which spares
// the sequence loop a second lookup that waits on the first.
type fseEntry struct {
	sym   uint8
	nb    uint8
	vbits uint8
	base  uint16
	mask  uint16 // 1<<nb - 1
	val   uint32
}

// bake sets the val and vbits of the entries of t for codes of the given
// bases and extra bits (nil for offsets: 1<<code and code).
func bake(t []fseEntry, base []uint32, extra []uint8) {
	for i := range t {
		c := t[i].sym
		if base == nil {
			t[i].val, t[i].vbits = 1<<c, c
		} else {
			t[i].val, t[i].vbits = base[c], extra[c]
		}
	}
}

// bitsPad is the zeroes before and after a block's sequence bitstream: a
// sequence reads at most 89 bits, so one that reads past the start of the
// stream still reads memory of the buffer (8 bytes at a time), and is
// found out after.
const bitsPad = 24

// Decode appends to dst the content of src, when src is one zstd frame of
// want bytes of the kind TimeEncoder writes and dst has want+16 bytes of
// room (the decoder copies 8 and 16 bytes at a time); ok is false, and
// dst's room written over, otherwise.
func (d *TimeDecoder) Decode(dst, src []byte, want int) (out []byte, ok bool) {
	if cap(dst)-len(dst) < want+16 || len(src) < 6 || binary.LittleEndian.Uint32(src) != frameMagic {
		return dst, false
	}
	// Single segment, a checksum, no dictionary, the reserved bit clear.
	fhd := src[4]
	if fhd&(1<<5|1<<2|1<<3|3) != 1<<5|1<<2 {
		return dst, false
	}
	var size uint64
	p := 5
	switch fhd >> 6 {
	case 0:
		size, p = uint64(src[5]), 6
	case 1:
		if len(src) < 7 {
			return dst, false
		}
		size, p = uint64(binary.LittleEndian.Uint16(src[5:]))+256, 7
	case 2:
		if len(src) < 9 {
			return dst, false
		}
		size, p = uint64(binary.LittleEndian.Uint32(src[5:])), 9
	default:
		if len(src) < 13 {
			return dst, false
		}
		size, p = binary.LittleEndian.Uint64(src[5:]), 13
	}
	if size != uint64(want) {
		return dst, false
	}
	o := dst[len(dst):cap(dst)]
	pos := 0
	reps := [3]int{1, 4, 8}
	for {
		if p+3 > len(src) {
			return dst, false
		}
		bh := int(src[p]) | int(src[p+1])<<8 | int(src[p+2])<<16
		p += 3
		n := bh >> 3
		if n > blockMax {
			return dst, false
		}
		switch (bh >> 1) & 3 {
		case blockRaw:
			if p+n > len(src) || pos+n > want {
				return dst, false
			}
			pos += copy(o[pos:], src[p:p+n])
			p += n
		case 1: // RLE
			if p >= len(src) || pos+n > want {
				return dst, false
			}
			for i := range o[pos : pos+n] {
				o[pos+i] = src[p]
			}
			pos += n
			p++
		case blockCompressed:
			if p+n > len(src) {
				return dst, false
			}
			// A block holds at most blockMax bytes, and no more than
			// the window, which is the frame's content.
			end := min(want, pos+blockMax)
			if pos, ok = d.block(o[:want+16], pos, end, src[p:p+n], &reps); !ok {
				return dst, false
			}
			p += n
		default:
			return dst, false
		}
		if bh&1 != 0 {
			break
		}
	}
	if pos != want || p+4 != len(src) || uint32(xxh64(o[:pos])) != binary.LittleEndian.Uint32(src[p:]) {
		return dst, false
	}
	return dst[:len(dst)+want], true
}

// block decodes one compressed block b into o[pos:], which it must not
// take past want (o has 16 bytes more), and returns the new end.
func (d *TimeDecoder) block(o []byte, pos, want int, b []byte, reps *[3]int) (int, bool) {
	b, ok := d.literals(b)
	if !ok || len(b) == 0 {
		return 0, false
	}
	nlits := len(d.lits)
	lits := d.lits[:cap(d.lits)]
	nb := int(b[0])
	switch {
	case nb < 128:
		b = b[1:]
	case nb < 255:
		if len(b) < 2 {
			return 0, false
		}
		nb, b = (nb-128)<<8|int(b[1]), b[2:]
	default:
		if len(b) < 3 {
			return 0, false
		}
		nb, b = int(b[1])|int(b[2])<<8+0x7F00, b[3:]
	}
	if nb == 0 {
		if len(b) != 0 || pos+nlits > want {
			return 0, false
		}
		return pos + copy(o[pos:], lits[:nlits]), true
	}
	if len(b) < 1 || b[0]&3 != 0 {
		return 0, false
	}
	modes := b[0]
	b = b[1:]
	var logs [3]uint
	for k, t := range []struct {
		mode   byte
		table  []fseEntry
		maxSym int
		maxLog uint
		base   []uint32
		extra  []uint8
	}{
		{modes >> 6, d.ll[:], llMaxSym, llMaxLog, llBase[:], llBits[:]},
		{modes >> 4 & 3, d.of[:], ofMaxSym, ofMaxLog, nil, nil},
		{modes >> 2 & 3, d.ml[:], mlMaxSym, mlMaxLog, mlBase[:], mlBits[:]},
	} {
		switch t.mode {
		case modeRLE:
			if len(b) < 1 || int(b[0]) > t.maxSym {
				return 0, false
			}
			t.table[0] = fseEntry{sym: b[0]}
			bake(t.table[:1], t.base, t.extra)
			b = b[1:]
		case modeFSE:
			n, log, ok := readFSE(b, t.maxSym, t.maxLog, t.table)
			if !ok {
				return 0, false
			}
			bake(t.table[:1<<log], t.base, t.extra)
			b, logs[k] = b[n:], log
		default: // predefined or repeated tables: not TimeEncoder's
			return 0, false
		}
	}
	if len(b) == 0 || b[len(b)-1] == 0 {
		return 0, false
	}
	// The bitstream, between bitsPad zeroes: read from its end, past the
	// last byte's highest set bit, 8 bytes at a time into w, whose top
	// bits below the position read next are the stream's bits from
	// base+top down (RFC 8878 4.1: a bitstream is read backward).
	need := 2*bitsPad + len(b)
	if cap(d.bits) < need {
		d.bits = make([]byte, need)
	}
	bs := d.bits[:need]
	clear(bs[:bitsPad])
	copy(bs[bitsPad:], b)
	clear(bs[bitsPad+len(b):])
	const floor = 8 * bitsPad
	var w uint64
	var base, top uint
	bp := uint(8*(bitsPad+len(b)-1) + bits.Len8(b[len(b)-1]) - 1)
	// fill loads the 8 bytes that end with the bit at bp-1.
	fill := func(bp uint) (uint64, uint, uint) {
		e := (bp + 7) >> 3
		return binary.LittleEndian.Uint64(bs[e-8:]), 8 * (e - 8), bp - 8*(e-8)
	}
	w, base, top = fill(bp)
	top -= logs[0]
	lls := uint(w>>top) & (1<<logs[0] - 1)
	top -= logs[1]
	ofs := uint(w>>top) & (1<<logs[1] - 1)
	top -= logs[2]
	mls := uint(w>>top) & (1<<logs[2] - 1)
	llt, oft, mlt := &d.ll, &d.of, &d.ml
	r0, r1, r2 := reps[0], reps[1], reps[2]
	lp := 0
	// last is the 8 bytes before pos, once there are 8.
	var last uint64
	if pos >= 8 {
		last = binary.LittleEndian.Uint64(o[pos-8:])
	}
	// Sequences that are one time each go through timeRun: the offset
	// the repeated 8 (offset code 0, repeat offset 1), no extra bits.
	packRun(&d.run[runLL], d.ll[:1<<logs[0]], runLL)
	packRun(&d.run[runOF], d.of[:1<<logs[1]], runOF)
	packRun(&d.run[runML], d.ml[:1<<logs[2]], runML)
	for i := 0; i < nb; i++ {
		if r0 == 8 && pos >= 8 {
			st := timeState{w: w, base: base, top: top, lls: lls, mls: mls, ofs: ofs, pos: pos, lp: lp, last: last}
			i = d.timeRun(&st, i, nb, o[:want+16], want, lits, nlits)
			w, base, top, lls, mls, ofs, pos, lp, last = st.w, st.base, st.top, st.lls, st.mls, st.ofs, st.pos, st.lp, st.last
			if i == nb {
				break
			}
		}
		// A sequence reads at most 89 bits: from floor or above, its
		// loads stay in bs.
		if base+top < floor {
			return 0, false
		}
		le, oe, me := llt[lls&(1<<llMaxLog-1)], oft[ofs&(1<<ofMaxLog-1)], mlt[mls&(1<<mlMaxLog-1)]
		// A sequence's reads take at most 26 bits but for the codes'
		// extra bits (a new offset, long lengths): w has them once top
		// is 32 or more.
		if top < 32 {
			w, base, top = fill(base + top)
		}
		offVal, ml, ll := int(oe.val), int(me.val), int(le.val)
		if oe.vbits|me.vbits|le.vbits != 0 {
			top -= uint(oe.vbits)
			offVal += int(w>>top) & (1<<oe.vbits - 1)
			w, base, top = fill(base + top)
			top -= uint(me.vbits)
			ml += int(w>>top) & (1<<me.vbits - 1)
			top -= uint(le.vbits)
			ll += int(w>>top) & (1<<le.vbits - 1)
			w, base, top = fill(base + top)
		}
		if i != nb-1 {
			top -= uint(le.nb)
			lls = uint(le.base) + uint(w>>(top&63))&uint(le.mask)
			top -= uint(me.nb)
			mls = uint(me.base) + uint(w>>(top&63))&uint(me.mask)
			top -= uint(oe.nb)
			ofs = uint(oe.base) + uint(w>>(top&63))&uint(oe.mask)
		}
		if base+top < floor {
			return 0, false
		}
		// The offset (RFC 8878 3.1.2.5): above 3 a new one, else one of
		// the three repeated, shifted by one when no literal comes first.
		var off int
		if offVal > 3 {
			off, r0, r1, r2 = offVal-3, offVal-3, r0, r1
		} else {
			switch offVal + b2i(ll == 0) {
			case 1:
				off = r0
			case 2:
				off, r0, r1 = r1, r1, r0
			case 3:
				off, r0, r1, r2 = r2, r2, r0, r1
			default:
				off, r0, r1, r2 = r0-1, r0-1, r0, r1
			}
		}
		if lp+ll > nlits || pos+ll+ml > want {
			return 0, false
		}
		if off == 8 && ll+ml == 8 && pos >= 8 {
			// One time: its low ll bytes from the literals, the rest
			// from the time before, which last holds (a load of what
			// was just stored would wait for the store).
			mask := uint64(1)<<(8*ll) - 1
			last = binary.LittleEndian.Uint64(lits[lp:])&mask | last&^mask
			binary.LittleEndian.PutUint64(o[pos:], last)
			pos, lp = pos+8, lp+ll
			continue
		}
		// Literals: 16 bytes at a time, from lits and into o, which
		// have them to spare.
		if ll <= 16 {
			copy(o[pos:pos+16], lits[lp:lp+16])
		} else {
			copy(o[pos:pos+ll], lits[lp:lp+ll])
		}
		pos, lp = pos+ll, lp+ll
		if off > pos || off <= 0 {
			return 0, false
		}
		m := pos - off
		switch {
		case off >= 8 && ml <= 8:
			binary.LittleEndian.PutUint64(o[pos:], binary.LittleEndian.Uint64(o[m:]))
		case off >= ml:
			copy(o[pos:pos+ml], o[m:m+ml])
		default:
			for j := range ml {
				o[pos+j] = o[m+j]
			}
		}
		pos += ml
		if pos >= 8 {
			last = binary.LittleEndian.Uint64(o[pos-8:])
		}
	}
	bp = base + top
	if bp != floor {
		return 0, false
	}
	reps[0], reps[1], reps[2] = r0, r1, r2
	if pos+nlits-lp > want {
		return 0, false
	}
	return pos + copy(o[pos:], lits[lp:nlits]), true
}

// timeState is the sequence loop's state that timeRun takes and gives
// back.
type timeState struct {
	w             uint64
	base, top     uint
	lls, mls, ofs uint
	pos, lp       int
	last          uint64
}

// The tables of timeRun, and the most states any of them has.
const (
	runLL, runOF, runML = 0, 1, 2
	runStates           = 1 << max(llMaxLog, ofMaxLog, mlMaxLog)
)

// runBad is the tally of an entry that cannot be part of one time: with it,
// no three tallies add up to 8 (nor past a byte: 3 × runBad at most).
const runBad = 0x40

// runEntry is an entry of a decoding table as timeRun reads it: the bits
// of the next state (nb), their mask and the base they add to, and a
// tally. The tallies of a literal length, an offset and a match length
// add up to 8 just when the three make one time: 1 to 5 literals and a
// match of 3 to 7 bytes at repeat offset 1 (offset code 0), none with
// extra bits; an entry that is none of these tallies runBad. The literal
// length's tally is then the number of literals.
type runEntry struct {
	nb, tally  uint8
	mask, base uint16
}

// packRun writes the entries of t, a table of code kind (runLL, runOF or
// runML), into dst as timeRun reads them.
func packRun(dst *[runStates]runEntry, t []fseEntry, kind int) {
	for i, e := range t {
		tally := uint8(runBad)
		switch {
		case e.vbits != 0:
		case kind == runLL && e.val >= 1 && e.val <= 5, kind == runML && e.val <= 7:
			tally = uint8(e.val)
		case kind == runOF && e.sym == 0:
			tally = 0
		}
		dst[i] = runEntry{nb: e.nb, tally: tally, mask: e.mask, base: e.base}
	}
}

// timeRun decodes sequences i and on, up to but not including the last
// (nb-1), while each is one time: literals then a match at repeat offset
// 1, which is 8, that make 8 bytes, with no extra bits; it returns the
// first it leaves. A state takes at most 9 bits: with top at 32 or more
// the three fit.
//
// Its own loop, with few variables live, keeps most in registers, where
// the whole loop's spilled them. It writes the times, reads the literals
// and loads the bitstream through pointers whose room it checks once,
// before the loop (each bounds check kept a slice's length live, and its
// values went to the stack and back), and checks a sequence's three codes
// with one sum of tallies (runEntry): BenchmarkTimeDecode 7.29-7.36 ns a
// time with slices and a check of each code, 6.14-6.42 with pointers and
// the tallies (gap=2000ns, alternating). Pointers stay in their buffers:
// n times take 8n bytes of o and at most 5n literals, with 8 to spare for
// the 8-byte loads and stores; the bit position only goes down from where
// it is checked, and stays at 8*bitsPad or above for a load; a state
// indexes its table through a mask.
func (d *TimeDecoder) timeRun(st *timeState, i, nb int, o []byte, want int, lits []byte, nlits int) int {
	// A time takes 8 bytes of o and at most 5 literals: as many as both
	// have room for, with 8 bytes to spare (a time is read and written 8
	// bytes at a time), and never the last sequence, are decoded without
	// checking either.
	n := min(nb-1-i, (want-st.pos)/8, (nlits-st.lp)/5)
	// The bit position base+top only goes down, and its 8 bytes load
	// from bs: (base+top+7)/8 is at most len(bs).
	if n <= 0 || len(o) < want+8 || len(lits) < nlits+8 || st.pos < 0 || st.lp < 0 || (st.base+st.top+7)>>3 > uint(len(d.bits)) {
		return i
	}
	w, base, top, lls, mls, ofs, last := st.w, st.base, st.top, st.lls, st.mls, st.ofs, st.last
	t := &d.run
	bs := unsafe.Pointer(unsafe.SliceData(d.bits))
	op := unsafe.Pointer(unsafe.SliceData(o[st.pos:]))
	end := unsafe.Add(op, 8*n)
	lp := unsafe.Pointer(unsafe.SliceData(lits[st.lp:]))
	for op != end {
		le, oe, me := &t[runLL][lls&(runStates-1)], &t[runOF][ofs&(runStates-1)], &t[runML][mls&(runStates-1)]
		if le.tally+oe.tally+me.tally != 8 {
			break
		}
		if top < 32 {
			// A corrupt stream runs out: block finds it.
			bp := base + top
			if bp < 8*bitsPad {
				break
			}
			e := (bp + 7) >> 3
			w, base, top = *(*uint64)(unsafe.Add(bs, e-8)), 8*(e-8), bp-8*(e-8)
		}
		tl := top - uint(le.nb)
		tm := tl - uint(me.nb)
		top = tm - uint(oe.nb)
		lls = uint(le.base) + uint(w>>(tl&63))&uint(le.mask)
		mls = uint(me.base) + uint(w>>(tm&63))&uint(me.mask)
		ofs = uint(oe.base) + uint(w>>(top&63))&uint(oe.mask)
		ll := uint(le.tally)
		mask := uint64(1)<<(8*ll&63) - 1
		last = *(*uint64)(lp)&mask | last&^mask
		*(*uint64)(op) = last
		op, lp = unsafe.Add(op, 8), unsafe.Add(lp, ll)
	}
	// Where op and lp started is found again from the slices: kept in
	// variables, the two more values live in the loop cost 0.2-0.3 ns a
	// time (BenchmarkTimeDecode, alternating: 6.47-6.66 against
	// 6.72-6.83).
	done := int(uintptr(op)-uintptr(unsafe.Pointer(unsafe.SliceData(o[st.pos:])))) / 8
	lpos := st.lp + int(uintptr(lp)-uintptr(unsafe.Pointer(unsafe.SliceData(lits[st.lp:]))))
	*st = timeState{w: w, base: base, top: top, lls: lls, mls: mls, ofs: ofs, pos: st.pos + 8*done, lp: lpos, last: last}
	return i + done
}

// literals decodes the literals section that b begins with into d.lits
// and returns the rest of b.
func (d *TimeDecoder) literals(b []byte) ([]byte, bool) {
	if len(b) < 1 {
		return nil, false
	}
	typ, sf := int(b[0]&3), int(b[0]>>2&3)
	var n, hl int
	switch typ {
	case litRaw, litRLE:
		switch sf {
		case 0, 2:
			n, hl = int(b[0]>>3), 1
		case 1:
			if len(b) < 2 {
				return nil, false
			}
			n, hl = int(b[0]>>4)|int(b[1])<<4, 2
		default:
			if len(b) < 3 {
				return nil, false
			}
			n, hl = int(b[0]>>4)|int(b[1])<<4|int(b[2])<<12, 3
		}
		if n > blockMax {
			return nil, false
		}
		d.lits = grow(d.lits, n+16)[:n]
		if typ == litRaw {
			if len(b) < hl+n {
				return nil, false
			}
			copy(d.lits, b[hl:hl+n])
			return b[hl+n:], true
		}
		if len(b) < hl+1 {
			return nil, false
		}
		for i := range d.lits {
			d.lits[i] = b[hl]
		}
		return b[hl+1:], true
	case litCompressed:
		var c int
		switch sf {
		case 0, 1:
			if len(b) < 3 {
				return nil, false
			}
			h := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
			n, c, hl = h>>4&0x3FF, h>>14&0x3FF, 3
		case 2:
			if len(b) < 4 {
				return nil, false
			}
			h := int(binary.LittleEndian.Uint32(b))
			n, c, hl = h>>4&0x3FFF, h>>18&0x3FFF, 4
		default:
			if len(b) < 5 {
				return nil, false
			}
			h := int(binary.LittleEndian.Uint32(b)) | int(b[4])<<32
			n, c, hl = h>>4&0x3FFFF, h>>22&0x3FFFF, 5
		}
		if n > blockMax || len(b) < hl+c {
			return nil, false
		}
		s, rest, err := huff0.ReadTable(b[hl:hl+c], d.huff)
		if err != nil {
			return nil, false
		}
		d.huff = s
		d.lits = grow(d.lits, n+16)
		var out []byte
		if sf == 0 {
			out, err = s.Decoder().Decompress1X(d.lits[:0:n], rest)
		} else {
			out, err = s.Decoder().Decompress4X(d.lits[:0:n], rest)
		}
		if err != nil || len(out) != n {
			return nil, false
		}
		d.lits = d.lits[:n]
		return b[hl+c:], true
	}
	return nil, false // treeless literals: not TimeEncoder's
}

// readFSE reads the FSE table description b begins with (RFC 8878 4.1.1)
// into t, and returns its length in bytes and the table's accuracy log.
func readFSE(b []byte, maxSym int, maxLog uint, t []fseEntry) (n int, log uint, ok bool) {
	r := fwdBits{b: b}
	log = r.read(4) + 5
	if log > maxLog {
		return 0, 0, false
	}
	var norm [mlMaxSym + 1]int
	size := 1 << log
	remaining, threshold, nbits := size+1, size, log+1
	sym := 0
	for remaining > 1 {
		if sym > maxSym {
			return 0, 0, false
		}
		mx := 2*threshold - 1 - remaining
		v := int(r.peek(nbits))
		var count int
		if low := v & (threshold - 1); low < mx {
			count = low
			r.pos += nbits - 1
		} else {
			if count = v & (2*threshold - 1); count >= threshold {
				count -= mx
			}
			r.pos += nbits
		}
		prob := count - 1
		norm[sym] = prob
		sym++
		remaining -= max(prob, -prob)
		if prob == 0 {
			for {
				rep := int(r.read(2))
				if sym+rep > maxSym+1 {
					return 0, 0, false
				}
				sym += rep // norm is zero there
				if rep != 3 {
					break
				}
			}
		}
		if remaining < 1 || r.pos > 8*uint(len(b)) {
			return 0, 0, false
		}
		for remaining < threshold {
			nbits--
			threshold >>= 1
		}
	}
	if remaining != 1 || sym < 2 {
		return 0, 0, false
	}
	if !buildFSE(norm[:sym], log, t) {
		return 0, 0, false
	}
	return int(r.pos+7) / 8, log, true
}

// buildFSE builds the decoding table of the normalized counts norm
// (RFC 8878 4.1.1, "FSE decoding table").
func buildFSE(norm []int, log uint, t []fseEntry) bool {
	size := 1 << log
	high := size - 1
	var next [mlMaxSym + 1]int
	for s, p := range norm {
		if p == -1 {
			t[high].sym = uint8(s)
			high--
			next[s] = 1
		} else {
			next[s] = p
		}
	}
	pos, step, mask := 0, size>>1+size>>3+3, size-1
	for s, p := range norm {
		for range p {
			t[pos].sym = uint8(s)
			for pos = (pos + step) & mask; pos > high; pos = (pos + step) & mask {
			}
		}
	}
	if pos != 0 {
		return false
	}
	for u := range t[:size] {
		s := t[u].sym
		k := next[s]
		next[s]++
		nb := int(log) - (bits.Len(uint(k)) - 1)
		if nb < 0 {
			return false
		}
		t[u].nb, t[u].base, t[u].mask = uint8(nb), uint16(k<<nb-size), uint16(1<<nb-1)
	}
	return true
}

// fwdBits reads the bits of b from its first byte's lowest.
type fwdBits struct {
	b   []byte
	pos uint
}

// peek returns the next n (at most 24) bits, zeroes past the end of b.
func (r *fwdBits) peek(n uint) uint {
	var w uint
	for k := uint(0); k < 4; k++ {
		if i := r.pos>>3 + k; i < uint(len(r.b)) {
			w |= uint(r.b[i]) << (8 * k)
		}
	}
	return w >> (r.pos & 7) & (1<<n - 1)
}

func (r *fwdBits) read(n uint) uint {
	v := r.peek(n)
	r.pos += n
	return v
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
