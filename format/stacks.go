package format

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

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
// footerless capture still has the table of every batch it kept. A
// reader unites the parts (Add).
type StackTable struct {
	Stacks  []Stack   `json:"stacks,omitempty"`
	Objects []Object  `json:"objects,omitempty"`
	Maps    []Mapping `json:"maps,omitempty"`
	Symbols []Symbol  `json:"symbols,omitempty"`
	// Processes lists the processes whose mappings could not be read,
	// and why: their user frames resolve to no object.
	Processes []ProcessNote `json:"processes,omitempty"`
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

// Add appends d's entries that t does not hold yet.
func (t *StackTable) Add(d *StackTable) {
	if d == nil {
		return
	}
	if len(t.Stacks) == 0 && len(t.Objects) == 0 && len(t.Maps) == 0 && len(t.Symbols) == 0 && len(t.Processes) == 0 {
		t.Stacks = slices.Clone(d.Stacks)
		t.Objects = slices.Clone(d.Objects)
		t.Maps = slices.Clone(d.Maps)
		t.Symbols = slices.Clone(d.Symbols)
		t.Processes = slices.Clone(d.Processes)
		return
	}
	t.Stacks = addNew(t.Stacks, d.Stacks, func(s Stack) uint64 { return s.ID })
	t.Objects = addNew(t.Objects, d.Objects, func(o Object) uint32 { return o.ID })
	t.Maps = addNew(t.Maps, d.Maps, func(m Mapping) Mapping { return m })
	type symKey struct {
		obj  uint32
		addr uint64
	}
	t.Symbols = addNew(t.Symbols, d.Symbols, func(s Symbol) symKey { return symKey{s.Object, s.Addr} })
	t.Processes = addNew(t.Processes, d.Processes, func(p ProcessNote) uint32 { return p.PID })
}

func addNew[E any, K comparable](have, add []E, key func(E) K) []E {
	seen := make(map[K]bool, len(have))
	for _, e := range have {
		seen[key(e)] = true
	}
	for _, e := range add {
		if k := key(e); !seen[k] {
			seen[k] = true
			have = append(have, e)
		}
	}
	return have
}

// Limits on a stack table read from a capture: a part may declare no more.
const (
	// MaxStackTableBytes bounds a part's JSON, decompressed.
	MaxStackTableBytes = 256 << 20
	// MaxFrames bounds the frames of one stack (the kernel gives at most
	// its perf_event_max_stack, 127 by default).
	MaxFrames = 1024
)

// ErrStackTable: a stack table part in the capture is malformed.
var ErrStackTable = errors.New("malformed stack table")

var stackEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true))

// encodeStackTable is a table part as stored: JSON, zstd-compressed, then
// base64 (a KeyValue's value is a flatbuffer string, which readers such as
// Arrow C++ and polars may expect to be UTF-8).
func encodeStackTable(t *StackTable) (string, error) {
	js, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("stack table: %w", err)
	}
	return base64.StdEncoding.EncodeToString(stackEnc.EncodeAll(js, nil)), nil
}

// decodeStackTable reads a part written by encodeStackTable and checks it.
func decodeStackTable(s string) (*StackTable, error) {
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStackTable, err)
	}
	dec, err := zstd.NewReader(bytes.NewReader(z), zstd.WithDecoderMaxMemory(MaxStackTableBytes), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStackTable, err)
	}
	defer dec.Close()
	js, err := io.ReadAll(io.LimitReader(dec, MaxStackTableBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStackTable, err)
	}
	if len(js) > MaxStackTableBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrStackTable, MaxStackTableBytes)
	}
	t := new(StackTable)
	if err := json.Unmarshal(js, t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStackTable, err)
	}
	for _, st := range t.Stacks {
		if len(st.Frames) > MaxFrames {
			return nil, fmt.Errorf("%w: stack %#x has %d frames (at most %d)", ErrStackTable, st.ID, len(st.Frames), MaxFrames)
		}
	}
	return t, nil
}
