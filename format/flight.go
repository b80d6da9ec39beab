package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// FlightOptions make a Writer a flight recorder (NewFlightWriter): it
// keeps, in memory, only the newest batches, as they were encoded for a
// file, and writes them as a capture on demand (FlightSnapshot).
type FlightOptions struct {
	// Window is how far back the ring reaches, in ns: a batch whose
	// events are all older than the newest event less Window is dropped.
	Window int64
	// MaxBytes bounds the encoded batches the ring keeps: past it the
	// oldest are dropped, and the ring reaches back less than Window.
	MaxBytes int64
}

// Extra keys (Meta.Extra) of a flight recorder's snapshot.
const (
	ExtraFlightTrigger  = "flight.trigger"    // what took it: "signal", "probe NAME", "latency START END > D", "end of recording"
	ExtraFlightTime     = "flight.trigger_ns" // boot-clock time of the trigger
	ExtraFlightWindow   = "flight.window"     // --flight, as a Go duration
	ExtraFlightAfter    = "flight.after"      // --after, as a Go duration
	ExtraFlightSnapshot = "flight.snapshot"   // its number, from 1
	ExtraFlightLatency  = "flight.latency_ns" // the pair's latency, for a latency trigger
)

// FlightStats are a flight recorder's running totals.
type FlightStats struct {
	Batches int   // batches in the ring
	Bytes   int64 // their encoded size
	// Dropped counts the batches dropped, oldest first; BySize those
	// dropped for MaxBytes while still inside Window.
	Dropped, BySize uint64
}

// flightRing is the ring of a flight recorder: the encoded record batch
// messages of the newest batches, oldest first. The encoder goroutine adds
// to it; FlightSnapshot takes a copy of the slice under mu, and the
// messages, never changed once added, are then written on any goroutine.
type flightRing struct {
	opts  FlightOptions
	sink  flightSink
	mu    sync.Mutex
	units []flightUnit
	bytes int64
	// newest is the latest event time added; edge the latest event time
	// of a batch dropped, 0 before the first drop: the ring holds every
	// batch with an event after edge.
	newest, edge int64
	stats        FlightStats
}

// flightUnit is one record batch message and the span of its event times.
type flightUnit struct {
	msg         []byte
	meta        int32
	first, last int64
	rows        int
}

// flightSink collects what the Arrow writer writes between two batches.
type flightSink struct{ buf []byte }

func (s *flightSink) Write(b []byte) (int, error) {
	s.buf = append(s.buf, b...)
	return len(b), nil
}

// NewFlightWriter returns a Writer whose batches go to a flight
// recorder's ring instead of a file. Append, Lost, Tick and Flush work as
// for a file, at the same cost; FlightSnapshot takes the ring's content.
// Switch is not for it, and Close writes nothing.
func NewFlightWriter(meta *Meta, opts WriterOptions, fo FlightOptions) (*Writer, error) {
	if fo.Window <= 0 || fo.MaxBytes <= 0 {
		return nil, errors.New("flight recorder: window and size must be positive")
	}
	f := &flightRing{opts: fo}
	return newWriter(&f.sink, meta, opts, f)
}

// added takes the message the Arrow writer just wrote (block b, of rows
// rows whose times are times) into the ring and drops what falls out of
// it. A batch of no rows (the header's, or one carrying a stack table
// part ahead of its batch) is not kept: a snapshot carries the whole
// stack table itself.
func (f *flightRing) added(b arrowipc.Block, rows int, times []byte) error {
	msg := f.sink.buf
	f.sink.buf = f.sink.buf[:0]
	if rows == 0 {
		return nil
	}
	if int64(len(msg)) != int64(b.Meta)+b.Body {
		return fmt.Errorf("flight recorder: batch of %d bytes, its block says %d", len(msg), int64(b.Meta)+b.Body)
	}
	u := flightUnit{msg: slices.Clone(msg), meta: b.Meta, rows: rows}
	u.first, u.last = timeSpan(times, rows)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.units = append(f.units, u)
	f.bytes += int64(len(u.msg))
	f.newest = max(f.newest, u.last)
	f.trim(f.newest)
	return nil
}

// timeSpan returns the earliest and latest of rows little-endian times.
func timeSpan(times []byte, rows int) (first, last int64) {
	first, last = int64(binary.LittleEndian.Uint64(times)), int64(binary.LittleEndian.Uint64(times))
	for i := 1; i < rows; i++ {
		t := int64(binary.LittleEndian.Uint64(times[8*i:]))
		first, last = min(first, t), max(last, t)
	}
	return first, last
}

// trim drops the oldest batches while they are all older than end less
// the window, or the ring is over its size; the newest batch stays.
func (f *flightRing) trim(end int64) {
	n := 0
	for n < len(f.units)-1 {
		u := &f.units[n]
		old := u.last < end-f.opts.Window-flightLag
		if !old && f.bytes <= f.opts.MaxBytes {
			break
		}
		if !old {
			f.stats.BySize++
		}
		f.stats.Dropped++
		f.bytes -= int64(len(u.msg))
		f.edge = max(f.edge, u.last)
		n++
	}
	if n > 0 {
		clear(f.units[:n])
		f.units = slices.Delete(f.units, 0, n)
	}
}

// flightLag is how much longer than its window the ring keeps batches: a
// snapshot ends at its due time, which the recorder sees pass only once it
// has read the events after it (by a drain interval, 100 ms at most when
// idle, and the ring's staging), so that the snapshot reaches a whole
// window back from there.
const flightLag = int64(time.Second)

// FlightStats returns the ring's totals; the zero value for a Writer that
// is not a flight recorder.
func (w *Writer) FlightStats() FlightStats {
	f := w.flight
	if f == nil {
		return FlightStats{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Batches, s.Bytes = len(f.units), f.bytes
	return s
}

// FlightSnapshot is what a flight recorder's ring held at one time, ready
// to be written as a capture of its own (WriteTo) on any goroutine while
// the recording goes on.
type FlightSnapshot struct {
	// Meta is a copy of the recording's metadata, Window set to what
	// the batches cover: from just after the newest event left out (or
	// the recording's start) to end, or the latest event kept if later
	// (a batch that began by end and went on). The caller may change its
	// start times and Extra.
	Meta Meta
	// Batches, Rows and Bytes are what the snapshot holds.
	Batches int
	Rows    int64
	Bytes   int64

	schema *arrow.Schema
	codec  Compression
	units  []flightUnit
	stacks *StackTable
}

// FlightSnapshot writes the current batch and waits for the encoder, then
// takes the ring's batches that reach past end less the window and begin
// by end, and the whole stack table. Like Append, it is called by the
// appending goroutine.
func (w *Writer) FlightSnapshot(end int64) (*FlightSnapshot, error) {
	f := w.flight
	if f == nil {
		return nil, errors.New("not a flight recorder")
	}
	if w.closed {
		return nil, errors.New("capture writer is closed")
	}
	if err := w.sync(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.trim(max(end, f.newest))
	edge := f.edge
	var units []flightUnit
	for _, u := range f.units {
		switch {
		case u.last < end-f.opts.Window:
			edge = max(edge, u.last) // older than the window
		case u.first <= end:
			units = append(units, u)
		}
	}
	f.mu.Unlock()

	s := &FlightSnapshot{Meta: *w.meta, schema: w.schema, codec: w.opts.Compression, units: units}
	s.Meta.Probes = slices.Clone(w.meta.Probes)
	s.Meta.Extra = maps.Clone(w.meta.Extra)
	s.Meta.Counts = nil
	win := Window{End: end}
	if w.meta.Window != nil {
		win.Start = w.meta.Window.Start
	}
	if edge > 0 {
		win.Start = max(win.Start, edge+1)
	}
	for _, u := range units {
		s.Rows += int64(u.rows)
		s.Bytes += int64(len(u.msg))
		win.End = max(win.End, u.last)
	}
	s.Batches = len(units)
	s.Meta.Window = &win
	// The whole table, as a view of what it holds now: AddStacks only
	// appends past these slices (see pending).
	if t := w.stacks; t != nil {
		s.stacks = &StackTable{
			Stacks:    t.Stacks[:len(t.Stacks):len(t.Stacks)],
			Objects:   t.Objects[:len(t.Objects):len(t.Objects)],
			Maps:      t.Maps[:len(t.Maps):len(t.Maps)],
			Symbols:   t.Symbols[:len(t.Symbols):len(t.Symbols)],
			Processes: t.Processes[:len(t.Processes):len(t.Processes)],
		}
	}
	return s, nil
}

// sync hands the current batch to the encoder and waits until it has
// written every batch handed to it.
func (w *Writer) sync() error {
	if err := w.Flush(); err != nil {
		return err
	}
	close(w.work)
	<-w.done
	w.work = make(chan *batch, 1)
	w.done = make(chan struct{})
	go w.encoder()
	return w.Err()
}

// WriteTo writes the snapshot to out as an ordinary capture: the schema
// with s.Meta, the probe dictionary, the stack table (in batches of no
// rows) and the batches as they were encoded, then the footer. Its footer
// has no counts (Meta.Counts): readers count its rows.
func (s *FlightSnapshot) WriteTo(out io.Writer) (int64, error) {
	js, err := s.Meta.encode()
	if err != nil {
		return 0, err
	}
	md := arrow.NewMetadata([]string{MetadataKey}, []string{js})
	schema := arrow.NewSchema(s.schema.Fields(), &md)
	pw := newPosWriter(out)
	codec, copts := ipcCodec(s.codec)
	aw, err := arrowipc.NewWriter(pw, schema, s.Meta.ProbeNames(), codec, copts...)
	if err != nil {
		return pw.pos, err
	}
	none := noRows(len(schema.Fields()))
	if !s.stacks.Empty() {
		err := encodeStackParts(s.stacks, maxPartJSON, func(p string) error {
			aw.SetBatchMetadata(arrow.NewMetadata([]string{StackTableKey}, []string{p}))
			return aw.WriteBatch(0, none)
		})
		if err != nil {
			return pw.pos, err
		}
	}
	for _, u := range s.units {
		if err := aw.WriteRawBatch(u.msg, u.meta); err != nil {
			return pw.pos, err
		}
	}
	if err := aw.Close(); err != nil {
		return pw.pos, err
	}
	return pw.pos, pw.Flush()
}
