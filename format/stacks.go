package format

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// StackTableKey is the custom-metadata key of a record batch message that
// carries a part of the capture's stack table (see StackTable).
const StackTableKey = "bpftape.stacks"

// StackTable is what a capture keeps so that replay can turn the stack ids
// of its UserStack and KernelStack columns into frames, and frames into
// function names, on any machine, after the processes and even their
// binaries are gone: the unique stacks, the mappings of every process that
// a user stack was taken in, the objects mapped (path and build id), and
// the symbols of those objects that some frame falls in (only those: see
// doc.go).
//
// A record batch carries, in its message's custom metadata, the part of
// the table that its rows are the first to need (StackTableKey), so a
// footerless capture still has the table of every batch it kept; a part
// too large for one message goes in several, the ones before the last in
// batches of no rows just ahead of the batch. A reader unites the parts
// (Add). Compare tables with Equal: reflect.DeepEqual also compares the
// index that Add keeps.
type StackTable struct {
	Stacks  []Stack   `json:"stacks,omitempty"`
	Objects []Object  `json:"objects,omitempty"`
	Maps    []Mapping `json:"maps,omitempty"`
	Symbols []Symbol  `json:"symbols,omitempty"`
	// Processes lists the processes whose mappings could not be read,
	// and why: their user frames resolve to no object.
	Processes []ProcessNote `json:"processes,omitempty"`

	// index holds the keys of the entries above for Add, which keeps it
	// between calls so that adding a part costs time in the part, not in
	// the table. It is nil in a table that Add never added to.
	index *stackIndex
}

// Stack is one unique stack: its frames' addresses, innermost first.
type Stack struct {
	ID     uint64   `json:"id"`
	Kernel bool     `json:"kernel,omitempty"`
	Frames []uint64 `json:"frames"`
}

// Object is a file mapped by a traced process, or the kernel ("[kernel]")
// or one of its modules ("[ext4]"), whose symbol addresses are then the
// kernel's own.
type Object struct {
	ID      uint32 `json:"id"`
	Path    string `json:"path"`
	BuildID string `json:"build_id,omitempty"`
	Kernel  bool   `json:"kernel,omitempty"`
	// NoSymbols says why the object has no symbols in the table when it
	// has none at all (a stripped binary with no debug file...).
	NoSymbols string `json:"no_symbols,omitempty"`
}

// Mapping is one executable mapping of process PID as read at Since
// (boot-clock ns): a runtime address a in [Start, End) is at file offset
// Offset + (a - Start) of Object, whose symbol address is a - Bias.
type Mapping struct {
	PID    uint32 `json:"pid"`
	Since  int64  `json:"since_ns"`
	Start  uint64 `json:"start"`
	End    uint64 `json:"end"`
	Offset uint64 `json:"offset"`
	Object uint32 `json:"object"`
	Bias   uint64 `json:"bias"`
}

// Symbol is a function of an object: [Addr, Addr+Size) in the object's
// symbol addresses (absolute for the kernel and modules). The recorder
// stores real sizes (a symbol without one gets the distance to the next);
// Size 0, a size unknown, covers addresses up to the next symbol of the
// table, which holds only the symbols hit.
type Symbol struct {
	Object uint32 `json:"object"`
	Addr   uint64 `json:"addr"`
	Size   uint64 `json:"size,omitempty"`
	Name   string `json:"name"`
}

// ProcessNote says why the mappings of a process are not in the table.
type ProcessNote struct {
	PID    uint32 `json:"pid"`
	Reason string `json:"reason"`
}

// StackID is the id of a stack in the capture: a 64-bit FNV-1a hash of its
// frames (and whether it is a kernel stack), never 0, which means no
// stack. It names frames, not a process: a user stack of the same
// addresses in two processes has one id, and the table holds the mappings
// of both. A hash rather than a counter keeps ids the same in every capture,
// so that captures compare and combine without renumbering.
func StackID(kernel bool, frames []uint64) uint64 {
	// FNV-1a over a kind byte and each frame's 8 bytes, little endian,
	// written out: through hash.Hash64 it took 203 ns for 24 frames, this
	// 72 (the recorder hashes every stack it drains).
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	var k byte
	if kernel {
		k = 1
	}
	h = (h ^ uint64(k)) * prime
	for _, f := range frames {
		for i := 0; i < 64; i += 8 {
			h = (h ^ (f >> i & 0xff)) * prime
		}
	}
	if h != 0 {
		return h
	}
	return 1
}

// Empty reports whether the table holds nothing.
func (t *StackTable) Empty() bool {
	return t == nil || len(t.Stacks)+len(t.Objects)+len(t.Maps)+len(t.Symbols)+len(t.Processes) == 0
}

// Equal reports whether t and u hold the same entries in the same order;
// a nil table or slice equals an empty one.
func (t *StackTable) Equal(u *StackTable) bool {
	if t == nil || u == nil {
		return t.Empty() && u.Empty()
	}
	return slices.EqualFunc(t.Stacks, u.Stacks, func(a, b Stack) bool {
		return a.ID == b.ID && a.Kernel == b.Kernel && slices.Equal(a.Frames, b.Frames)
	}) &&
		slices.Equal(t.Objects, u.Objects) &&
		slices.Equal(t.Maps, u.Maps) &&
		slices.Equal(t.Symbols, u.Symbols) &&
		slices.Equal(t.Processes, u.Processes)
}

// Add appends d's entries that t does not hold yet: a stack, an object
// and a process note by id, a symbol by object and address, a mapping
// whole; the first of entries with one key wins. Into an empty table it
// copies d as it is.
//
// Add keeps an index of t's keys between calls, so that adding d costs
// time in d, not in t. When t's slices change other than by Add, a new
// length or array is seen and t indexed anew at the next Add (in time in
// t); entries changed in place are not: change them only through Add.
func (t *StackTable) Add(d *StackTable) {
	if d == nil {
		return
	}
	if t.Empty() {
		t.Stacks = slices.Clone(d.Stacks)
		t.Objects = slices.Clone(d.Objects)
		t.Maps = slices.Clone(d.Maps)
		t.Symbols = slices.Clone(d.Symbols)
		t.Processes = slices.Clone(d.Processes)
		return
	}
	if t.index == nil {
		t.index = &stackIndex{seed: maphash.MakeSeed()}
	}
	x := t.index
	t.Stacks = x.stacks.add(t.Stacks, d.Stacks, func(s *Stack) uint64 { return s.ID }, nil)
	t.Objects = x.objects.add(t.Objects, d.Objects, func(o *Object) uint32 { return o.ID }, nil)
	t.Maps = x.maps.add(t.Maps, d.Maps, func(m *Mapping) uint64 { return maphash.Comparable(x.seed, *m) },
		func(a, b *Mapping) bool { return *a == *b })
	t.Symbols = x.symbols.add(t.Symbols, d.Symbols, func(s *Symbol) uint64 { return maphash.Comparable(x.seed, symbolKey{s.Object, s.Addr}) },
		func(a, b *Symbol) bool { return a.Object == b.Object && a.Addr == b.Addr })
	t.Processes = x.processes.add(t.Processes, d.Processes, func(p *ProcessNote) uint32 { return p.PID }, nil)
}

// stackIndex is the keys of a table's entries, by kind (see Add).
// Mappings and symbols are indexed by a hash of their keys, the whole
// mapping and the object and address, which take 56 and 16 bytes: an
// index of a million mappings by the mappings themselves took 130 MB.
type stackIndex struct {
	stacks    keySet[Stack, uint64]
	objects   keySet[Object, uint32]
	maps      keySet[Mapping, uint64]
	symbols   keySet[Symbol, uint64]
	processes keySet[ProcessNote, uint32]
	seed      maphash.Seed // of the hashes
}

type symbolKey struct {
	object uint32
	addr   uint64
}

// keySet indexes the entries of a slice by key: each key to the position
// of the first entry with it. It records which slice that was (its first
// element and length), so that a slice changed other than by add is seen
// and indexed anew.
//
// A key may also be a hash of what makes entries the same (see add); an
// entry whose hash an entry unlike it had first is listed in more.
type keySet[E any, K comparable] struct {
	first map[K]int32 // a table holds far fewer than 2^31 entries
	more  map[K][]int32
	base  *E // &have[0] when indexed
	n     int
}

// add appends to have the entries of add that are the same as none in
// have nor earlier in add, and returns it. Entries are the same when their
// keys are, or, if same is not nil, when their keys are and same says so.
func (s *keySet[E, K]) add(have, add []E, key func(*E) K, same func(a, b *E) bool) []E {
	if len(add) == 0 {
		return have
	}
	if s.first == nil || len(have) != s.n || len(have) > 0 && &have[0] != s.base {
		s.first, s.more = make(map[K]int32, len(have)+len(add)), nil
		for i := range have {
			s.insert(have[:i], &have[i], key, same)
		}
	}
	have = slices.Grow(have, len(add))
	for i := range add {
		if s.insert(have, &add[i], key, same) {
			have = append(have, add[i])
		}
	}
	s.n, s.base = len(have), nil
	if len(have) > 0 {
		s.base = &have[0]
	}
	return have
}

// insert indexes e as the entry after have, unless it is the same as one
// of have; it reports whether it did.
func (s *keySet[E, K]) insert(have []E, e *E, key func(*E) K, same func(a, b *E) bool) bool {
	k := key(e)
	i, ok := s.first[k]
	if !ok {
		s.first[k] = int32(len(have))
		return true
	}
	if same == nil || same(&have[i], e) {
		return false
	}
	for _, i := range s.more[k] {
		if same(&have[i], e) {
			return false
		}
	}
	if s.more == nil {
		s.more = make(map[K][]int32)
	}
	s.more[k] = append(s.more[k], int32(len(have)))
	return true
}

// Limits on a stack table read from a capture. A part's JSON is bounded as
// it is decompressed, and an entry's JSON as it is read. The rest hold
// over the whole table: the reader counts each entry of every part as it
// decodes it, before it decodes the next, so a table over a limit fails
// with ErrLimit, naming the limit, having decoded at most one entry more.
// Decoded JSON grows (an empty mapping, {}, is 3 bytes of JSON and 56 of
// memory), so a small part could otherwise take gigabytes.
//
// The limits let a big capture through (a million stacks of a dozen
// frames and a million symbols of 40-byte names take about 200 MiB) while
// the whole decoded table stays within MaxStackTableMemory: reading it
// takes up to about twice that at the peak, with the copies and indexes
// that uniting its parts makes (440 MB for 4 parts of a million symbols,
// 245 MB for a million stacks and half a million symbols in 100 parts).
const (
	// MaxStackTableBytes bounds a part's JSON, decompressed.
	MaxStackTableBytes = 256 << 20
	// MaxStackEntryBytes bounds the JSON read to decode one entry of a
	// part (a stack of MaxFrames frames takes at most 22 KiB), and so
	// what an entry may take before it is counted.
	MaxStackEntryBytes = 1 << 20
	// MaxFrames bounds the frames of one stack (the kernel gives at most
	// its perf_event_max_stack, 127 by default).
	MaxFrames = 1024

	// MaxStacks bounds the stacks of a table (40 bytes each, and 8 a frame).
	MaxStacks = 1 << 21
	// MaxStackObjects bounds the objects (64 bytes each, and the strings).
	MaxStackObjects = 1 << 20
	// MaxStackMaps bounds the mappings (56 bytes each).
	MaxStackMaps = 1 << 21
	// MaxStackSymbols bounds the symbols (40 bytes each, and the name).
	MaxStackSymbols = 1 << 22
	// MaxStackProcesses bounds the process notes (24 bytes each, and the
	// reason).
	MaxStackProcesses = 1 << 20
	// MaxStackTableFrames bounds the frames of all stacks.
	MaxStackTableFrames = 1 << 25
	// MaxStackTableStrings bounds the bytes of all names, paths, build ids
	// and reasons.
	MaxStackTableStrings = 128 << 20
	// MaxStackTableMemory bounds the decoded table: each entry's fixed
	// size (as above, on 64-bit machines), 8 bytes a frame and the bytes
	// of its strings.
	MaxStackTableMemory = 256 << 20
)

// ErrStackTable: a stack table part in the capture is malformed.
var ErrStackTable = errors.New("malformed stack table")

// stackEnc compresses stack table parts. It is made when a part is first
// written, not when the program starts: every verb paid 0.2-0.5 ms for it.
var stackEnc = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true))
	if err != nil {
		panic(err) // only for invalid options
	}
	return e
})

// maxPartJSON bounds the JSON of each part that a Writer and Repair write,
// so that a table of any size goes in parts a reader can open: a part of
// 4 MiB of JSON is at most about 5.4 MiB of message metadata once
// compressed (zstd adds a few bytes a block to what it cannot shrink) and
// in base64 (a third more), well under MaxMessageMeta, and a part is
// encoded in memory of its own size, not the table's. Only an entry larger
// than the bound makes a larger part, of that entry alone.
const maxPartJSON = 4 << 20

// encodeStackTable is t as one part, however large (a Writer splits a
// large table: see encodeStackParts).
func encodeStackTable(t *StackTable) (string, error) {
	var part string
	err := encodeStackParts(t, math.MaxInt, func(p string) error { part = p; return nil })
	if err == nil && part == "" {
		part = base64.StdEncoding.EncodeToString(stackEnc().EncodeAll([]byte("{}"), nil))
	}
	return part, err
}

// encodeStackParts encodes t's entries in parts of at most limit bytes of
// JSON each, in order, and calls emit with each as it is stored: JSON,
// zstd-compressed, then base64 (a KeyValue's value is a flatbuffer string,
// which readers such as Arrow C++ and polars may expect to be UTF-8). A
// part is a StackTable object holding the next entries of each kind, so
// that uniting the parts in order gives t; a table that fits in one part
// is written exactly as json.Marshal, zstd and base64 of the whole would
// write it. An empty table has no parts.
func encodeStackParts(t *StackTable, limit int, emit func(part string) error) error {
	if t.Empty() {
		return nil
	}
	p := &partEncoder{limit: limit, emit: emit}
	p.enc = json.NewEncoder(&p.entry)
	err := encodeEntries(p, "stacks", t.Stacks)
	if err == nil {
		err = encodeEntries(p, "objects", t.Objects)
	}
	if err == nil {
		err = encodeEntries(p, "maps", t.Maps)
	}
	if err == nil {
		err = encodeEntries(p, "symbols", t.Symbols)
	}
	if err == nil {
		err = encodeEntries(p, "processes", t.Processes)
	}
	if err == nil {
		err = p.flush()
	}
	return err
}

func encodeEntries[E any](p *partEncoder, key string, es []E) error {
	for i := range es {
		if err := p.add(key, &es[i]); err != nil {
			return err
		}
	}
	return nil
}

// partEncoder builds the JSON of a part an entry at a time, as json.Marshal
// writes a StackTable: {"stacks":[...],"objects":[...],...}, the kinds in
// the order of its fields, a kind without entries left out.
type partEncoder struct {
	limit int
	emit  func(string) error
	js    []byte       // the part so far
	key   string       // the kind whose array is open at the end of js
	entry bytes.Buffer // an entry's JSON
	enc   *json.Encoder
	z     []byte // js compressed
}

// add appends v, an entry of kind key, to the part, after emitting the
// part if v would take it past limit.
func (p *partEncoder) add(key string, v any) error {
	p.entry.Reset()
	if err := p.enc.Encode(v); err != nil {
		return fmt.Errorf("stack table: %w", err)
	}
	e := p.entry.Bytes()
	e = e[:len(e)-1] // the newline Encode ends with
	// 32 bytes are more than a new key and the closing brackets take.
	if len(p.js) > 0 && len(p.js)+len(e)+32 > p.limit {
		if err := p.flush(); err != nil {
			return err
		}
	}
	switch {
	case len(p.js) == 0:
		p.js = append(append(append(p.js, `{"`...), key...), `":[`...)
	case key != p.key:
		p.js = append(append(append(p.js, `],"`...), key...), `":[`...)
	default:
		p.js = append(p.js, ',')
	}
	p.js = append(p.js, e...)
	p.key = key
	return nil
}

// flush closes the part, if it holds any entry, and emits it.
func (p *partEncoder) flush() error {
	if len(p.js) == 0 {
		return nil
	}
	p.js = append(p.js, "]}"...)
	p.z = stackEnc().EncodeAll(p.js, p.z[:0])
	p.js, p.key = p.js[:0], ""
	var b strings.Builder
	b.Grow(base64.StdEncoding.EncodedLen(len(p.z)))
	w := base64.NewEncoder(base64.StdEncoding, &b)
	w.Write(p.z) // a strings.Builder does not fail
	w.Close()
	return p.emit(b.String())
}

// stackCount is what the parts of a table decoded so far hold, counted
// against the limits (see MaxStacks).
type stackCount struct {
	stacks, objects, maps, symbols, processes int
	frames, strings, memory                   int64
}

func limitf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrLimit}, args...)...)
}

// entry counts an entry of a kind whose count is *n, limited to max, and
// its decoded size: fixed bytes, frames and strings bytes.
func (c *stackCount) entry(n *int, max int, what, limit string, fixed uintptr, frames, strs int) error {
	if *n >= max {
		return limitf("more than %d %s (format.%s)", max, what, limit)
	}
	*n++
	if c.frames += int64(frames); c.frames > MaxStackTableFrames {
		return limitf("more than %d frames (format.MaxStackTableFrames)", MaxStackTableFrames)
	}
	if c.strings += int64(strs); c.strings > MaxStackTableStrings {
		return limitf("more than %s of names and paths (format.MaxStackTableStrings)", sizeStr(MaxStackTableStrings))
	}
	if c.memory += int64(fixed) + 8*int64(frames) + int64(strs); c.memory > MaxStackTableMemory {
		return limitf("more than %s decoded (format.MaxStackTableMemory)", sizeStr(MaxStackTableMemory))
	}
	return nil
}

// since counts against the limits the entries that t holds past the
// first of each kind that l gives (see lengths).
func (c *stackCount) since(t *StackTable, l stackLengths) error {
	for i := l.stacks; i < len(t.Stacks); i++ {
		if err := c.stack(&t.Stacks[i]); err != nil {
			return err
		}
	}
	for i := l.objects; i < len(t.Objects); i++ {
		if err := c.object(&t.Objects[i]); err != nil {
			return err
		}
	}
	for i := l.maps; i < len(t.Maps); i++ {
		if err := c.mapping(&t.Maps[i]); err != nil {
			return err
		}
	}
	for i := l.symbols; i < len(t.Symbols); i++ {
		if err := c.symbol(&t.Symbols[i]); err != nil {
			return err
		}
	}
	for i := l.processes; i < len(t.Processes); i++ {
		if err := c.process(&t.Processes[i]); err != nil {
			return err
		}
	}
	return nil
}

// stackLengths is how many entries of each kind a table holds.
type stackLengths struct{ stacks, objects, maps, symbols, processes int }

func (t *StackTable) lengths() stackLengths {
	return stackLengths{len(t.Stacks), len(t.Objects), len(t.Maps), len(t.Symbols), len(t.Processes)}
}

func (c *stackCount) stack(s *Stack) error {
	if len(s.Frames) > MaxFrames {
		return limitf("stack %#x has %d frames, more than %d (format.MaxFrames)", s.ID, len(s.Frames), MaxFrames)
	}
	return c.entry(&c.stacks, MaxStacks, "stacks", "MaxStacks", unsafe.Sizeof(*s), len(s.Frames), 0)
}

func (c *stackCount) object(o *Object) error {
	return c.entry(&c.objects, MaxStackObjects, "objects", "MaxStackObjects", unsafe.Sizeof(*o), 0, len(o.Path)+len(o.BuildID)+len(o.NoSymbols))
}

func (c *stackCount) mapping(m *Mapping) error {
	return c.entry(&c.maps, MaxStackMaps, "mappings", "MaxStackMaps", unsafe.Sizeof(*m), 0, 0)
}

func (c *stackCount) symbol(s *Symbol) error {
	return c.entry(&c.symbols, MaxStackSymbols, "symbols", "MaxStackSymbols", unsafe.Sizeof(*s), 0, len(s.Name))
}

func (c *stackCount) process(p *ProcessNote) error {
	return c.entry(&c.processes, MaxStackProcesses, "process notes", "MaxStackProcesses", unsafe.Sizeof(*p), 0, len(p.Reason))
}

// decodeStackTable reads a part written by encodeStackTable and checks it
// against the limits, counting its entries into c, which holds those of
// the parts of the same table decoded before (nil: there are none). When
// the part fails, c is left as it was.
//
// The JSON is decoded as it is decompressed, an entry at a time, each
// counted before the next is read: the part is never held whole, as JSON
// or decoded, beyond the limits.
func decodeStackTable(s string, c *stackCount) (_ *StackTable, err error) {
	if c == nil {
		c = new(stackCount)
	}
	before := *c
	defer func() {
		if err != nil {
			*c = before
			if !errors.Is(err, ErrLimit) {
				err = fmt.Errorf("%w: %v", ErrStackTable, err)
			}
		}
	}()
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	zr, err := zstd.NewReader(bytes.NewReader(z), zstd.WithDecoderMaxMemory(MaxStackTableBytes), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	p := &partDecoder{in: jsonLimiter{r: zr}, c: c}
	p.dec = json.NewDecoder(&p.in)
	p.dec.UseNumber() // skipping an unknown key's value must not fail on a number
	return p.table()
}

// partDecoder walks the JSON of a part, decoding the entries of each array
// one by one.
type partDecoder struct {
	in  jsonLimiter
	dec *json.Decoder
	c   *stackCount
}

// token, more and decode are the decoder's, for one token or entry each:
// it may read at most MaxStackEntryBytes for it.
func (p *partDecoder) token() (json.Token, error) { p.in.entry = 0; return p.dec.Token() }
func (p *partDecoder) more() bool                 { p.in.entry = 0; return p.dec.More() }
func (p *partDecoder) decode(v any) error         { p.in.entry = 0; return p.dec.Decode(v) }

// table reads a part as json.Unmarshal would into a StackTable: an object
// whose keys match the fields' names without regard to case (a key that
// repeats replaces the entries before, another key is skipped), or null.
func (p *partDecoder) table() (*StackTable, error) {
	t := new(StackTable)
	tok, err := p.token()
	switch {
	case err == io.EOF:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	case tok == json.Delim('{'):
		for p.more() {
			if tok, err = p.token(); err != nil {
				return nil, err
			}
			key, _ := tok.(string)
			switch {
			case strings.EqualFold(key, "stacks"):
				t.Stacks, err = decodeArray(p, (*stackCount).stack)
			case strings.EqualFold(key, "objects"):
				t.Objects, err = decodeArray(p, (*stackCount).object)
			case strings.EqualFold(key, "maps"):
				t.Maps, err = decodeArray(p, (*stackCount).mapping)
			case strings.EqualFold(key, "symbols"):
				t.Symbols, err = decodeArray(p, (*stackCount).symbol)
			case strings.EqualFold(key, "processes"):
				t.Processes, err = decodeArray(p, (*stackCount).process)
			default:
				err = p.skip()
			}
			if err != nil {
				return nil, err
			}
		}
		if _, err := p.token(); err != nil { // the closing brace
			return nil, err
		}
	case tok != nil:
		return nil, fmt.Errorf("%v where an object belongs", tok)
	}
	if _, err := p.token(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the table")
		}
		return nil, err
	}
	return t, nil
}

// decodeArray reads an array (or null) of entries, counting each with
// count as soon as it is decoded.
func decodeArray[E any](p *partDecoder, count func(*stackCount, *E) error) ([]E, error) {
	tok, err := p.token()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("%v where an array belongs", tok)
	}
	var es chunks[E]
	for p.more() {
		e := es.next()
		if err := p.decode(e); err != nil {
			return nil, err
		}
		if err := count(p.c, e); err != nil {
			return nil, err
		}
	}
	if _, err := p.token(); err != nil { // the closing bracket
		return nil, err
	}
	return es.slice(), nil
}

// maxJSONDepth is the nesting json.Unmarshal allows.
const maxJSONDepth = 10000

// skip reads a value that the table has no field for, token by token
// (json.Decoder's Token does not bound the nesting: skip does, as
// json.Unmarshal would in the table's object).
func (p *partDecoder) skip() error {
	depth := 0
	for {
		tok, err := p.token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			if depth++; depth >= maxJSONDepth {
				return errors.New("exceeded max depth")
			}
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// chunks collects the entries of an array as they are decoded, in chunks
// that double up to 64Ki entries, so that each entry is copied once, into
// the slice of all at the end, rather than at each growth of one slice:
// an array of n entries allocates about 2n of them in all, not 5n.
type chunks[E any] struct {
	full [][]E
	cur  []E
	n    int
}

func (c *chunks[E]) next() *E {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]E, 0, min(max(2*cap(c.cur), 16), 1<<16))
	}
	c.n++
	c.cur = c.cur[:len(c.cur)+1]
	return &c.cur[len(c.cur)-1]
}

// slice returns the entries; an empty array is an empty slice, not nil,
// as json.Unmarshal makes it.
func (c *chunks[E]) slice() []E {
	if c.full == nil {
		if c.cur == nil {
			return []E{}
		}
		return c.cur
	}
	all := make([]E, 0, c.n)
	for _, f := range c.full {
		all = append(all, f...)
	}
	return append(all, c.cur...)
}

// jsonLimiter passes a part's JSON to the decoder, and fails past
// MaxStackTableBytes in all or MaxStackEntryBytes since entry was zeroed
// (the decoder reads more for a value only while the value is incomplete,
// so this fails only for a value that is longer).
type jsonLimiter struct {
	r            io.Reader
	total, entry int64
}

func (l *jsonLimiter) Read(b []byte) (int, error) {
	if l.entry >= MaxStackEntryBytes {
		return 0, limitf("an entry of more than %s of JSON (format.MaxStackEntryBytes)", sizeStr(MaxStackEntryBytes))
	}
	if l.total >= MaxStackTableBytes {
		var one [1]byte
		if n, err := io.ReadFull(l.r, one[:]); n == 0 {
			return 0, err
		}
		return 0, limitf("a part of more than %s of JSON (format.MaxStackTableBytes)", sizeStr(MaxStackTableBytes))
	}
	b = b[:min(int64(len(b)), MaxStackEntryBytes-l.entry, MaxStackTableBytes-l.total)]
	n, err := l.r.Read(b)
	l.total += int64(n)
	l.entry += int64(n)
	return n, err
}
