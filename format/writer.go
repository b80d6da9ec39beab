package format

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/klauspost/compress/zstd"

	"github.com/bpftape/bpftape/format/arrowipc"
	"github.com/bpftape/bpftape/format/internal/zstdframe"
)

// Compression is the body compression of a capture's record batches.
type Compression string

// Supported compressions; zstd is the default because it makes the smallest files.
const (
	Zstd Compression = "zstd"
	LZ4  Compression = "lz4"
	None Compression = "none"
)

// ParseCompression checks a --compress value.
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(s); c {
	case Zstd, LZ4, None:
		return c, nil
	case "":
		return Zstd, nil
	}
	return "", fmt.Errorf("unknown compression %q: use zstd, lz4 or none", s)
}

// Defaults for WriterOptions. On the seed-like stream (format/formattest)
// with zstd, batches of 16Ki, 32Ki and 64Ki rows cost the same CPU within
// the noise of a shared machine and make files of 3.93, 3.90 and 3.89
// bytes an event, while a batch holds about 60 bytes a row (2 MiB at 32Ki
// rows) and the writer keeps three: 32Ki rows is the middle.
const (
	DefaultBatchRows  = 32 << 10
	DefaultBatchBytes = 16 << 20
	DefaultMaxAge     = time.Second
)

// zstdLevels are the zstd levels of a capture's columns: klauspost's
// SpeedDefault (zstd level 3) for all but time. On the seed-like stream
// (format/formattest) the default level makes the other columns 0.34 bytes
// an event smaller than the fastest and is no slower on them (arg2 0.36 ->
// 0.17, retval 0.78 -> 0.72, probe 0.40 -> 0.35). The time column has an
// encoder of its own (ipcCodec).
var zstdLevels = []arrowipc.Option{
	arrowipc.WithZstdLevel(zstd.SpeedDefault),
}

// ipcCodec returns the body compression of a capture compressed with c, and
// its options: zstd at zstdLevels, and the time column's frames written by
// zstdframe.TimeEncoder, which knows that a time shares its high bytes
// with the one before (format/doc.go has the decision, bench/README.md
// the numbers).
func ipcCodec(c Compression) (arrowipc.Codec, []arrowipc.Option) {
	switch c {
	case Zstd:
		return arrowipc.Zstd, append(zstdLevels[:len(zstdLevels):len(zstdLevels)], timeColumnZstd())
	case LZ4:
		return arrowipc.LZ4, nil
	}
	return arrowipc.None, nil
}

// timeColumnZstd writes the time column with zstdframe.TimeEncoder, or,
// when the environment has BPFTAPE_BENCH_TIME_ZSTD=fastest (bench/driver's
// reccpu part, which compares the two), with klauspost's fastest level.
func timeColumnZstd() arrowipc.Option {
	if os.Getenv("BPFTAPE_BENCH_TIME_ZSTD") == "fastest" {
		return arrowipc.WithColumnZstdLevel(ColTime, zstd.SpeedFastest)
	}
	return arrowipc.WithColumnZstdEncoder(ColTime, new(zstdframe.TimeEncoder).Encode)
}

// maxBatchColumnBytes bounds the rows of a batch by the fixed-width bytes
// of a row (8 for an integer, 16 for a string view): a batch's columns are
// allocated whole, and a writer holds three batches.
const maxBatchColumnBytes = 8 << 20

// WriterOptions tune a Writer; the zero value gives zstd, 32Ki-row batches
// and a flush at least once per second (through Tick).
type WriterOptions struct {
	Compression Compression
	// BatchRows and BatchBytes bound a batch: it is written when either is reached.
	BatchRows  int
	BatchBytes int
	// MaxAge is how old a batch's first event may get before Tick writes it:
	// the most a recorder killed with SIGKILL can lose.
	MaxAge time.Duration
}

// Event is one sample to append. Ints and Strs are indexed by the probe's
// field index; an integer field reads Ints, a string field reads Strs. The
// Writer copies what it needs, so the caller can reuse an Event and its slices.
type Event struct {
	Time  int64 // ns, CLOCK_BOOTTIME
	CPU   uint16
	PID   uint32
	TID   uint32
	Comm  []byte // may be NUL-padded
	Probe uint16 // index into Meta.Probes
	Ints  []uint64
	Strs  [][]byte
}

// Stats are a Writer's running totals; safe to read while the writer works.
type Stats struct {
	// Events counts the event rows appended. An atomic add on every event
	// would cost Append a quarter of its time, so it is brought up to date
	// every 1024 events and by Tick, Flush and Close.
	Events  atomic.Uint64
	Lost    atomic.Uint64 // events reported lost through Lost
	Batches atomic.Uint64 // batches written
	Bytes   atomic.Int64  // bytes written to the file so far
}

// probeLayout is where a probe's fields go: cols[i] is the column of field
// i. The columns it does not fill are null in its rows.
type probeLayout struct {
	cols []int
}

type batch struct {
	n      int
	strLen int
	stacks *StackTable // the stack table part it needs: entries of Writer.stacks
	forged string      // a part carried instead of stacks (AddForgedStackPart)
	cols   []colBuf
	data   []arrowipc.ColumnData // cols as handed to the file writer
}

// Writer appends events to a capture file. It is not safe for concurrent
// use: one goroutine appends, while a second one compresses and writes the
// previous batch, so that draining the ring buffer never waits for zstd.
type Writer struct {
	Stats Stats

	meta    *Meta
	schema  *arrow.Schema
	opts    WriterOptions
	rows    int // rows a batch holds
	layouts []probeLayout

	lastComm []byte // raw comm of the previous event, for Append's cache
	events   uint64 // events appended, published in Stats.Events
	lastTime int64  // time of the last event appended

	file  io.Closer
	out   *posWriter
	aw    *arrowipc.Writer
	cur   *batch
	since time.Time
	work  chan *batch
	free  chan *batch
	done  chan struct{}
	errMu sync.Mutex
	err   error
	// unwritten counts by probe the events of batches that did not reach
	// the file whole, once a write failed (see Unwritten).
	unwritten []uint64
	closed    bool

	// stacks is the capture's stack table, every entry AddStacks added,
	// kept for the next file after Switch, which carries it whole. sent
	// counts the entries of each kind that batches have taken: those
	// past it are the part the next batch needs (pending).
	stacks *StackTable
	sent   stackLengths
	// none is the columns of a batch of no rows, which carries a stack
	// table part ahead of the batch that needs it (see encode).
	none []arrowipc.ColumnData
	// forged is the stack table part the next batch carries as it is
	// (see AddForgedStackPart).
	forged string

	// counts tallies the current file's batches as the encoder writes
	// them, for its footer (Meta.Counts); widths are the columns' value
	// widths it needs.
	counts Counts
	widths []int
	// Projected's tallies of the current file: rows handed to the encoder
	// (appending goroutine), rows and bytes of the batches of rows written
	// (encoder), the bytes before the first batch, and the bytes per row
	// of the file before Switch.
	handed      uint64
	rowsWritten atomic.Uint64
	rowBytes    atomic.Int64
	headerBytes int64
	prevPerRow  float64

	// forgeCounts, when set, changes the final counts before they go into
	// the footer (FuzzSeeds' forged footers): after the encoder's last
	// batch, which tallies them.
	forgeCounts func(*Counts)

	// flight, when not nil, takes every batch written instead of a file
	// (NewFlightWriter).
	flight *flightRing
}

// Create creates (or truncates) path with mode 0600 and starts a capture
// in it, for tests and tools; bpftape's verbs open their outputs through
// package outfile and NewFileWriter, which never replace a file unasked.
func Create(path string, meta *Meta, opts WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	// An overwritten file keeps its mode: make it private too.
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, err
		}
	}
	w, err := NewFileWriter(f, meta, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// NewFileWriter is NewWriter on a file the Writer closes: at Close, or at
// Switch for the file it leaves.
func NewFileWriter(f io.WriteCloser, meta *Meta, opts WriterOptions) (*Writer, error) {
	w, err := NewWriter(f, meta, opts)
	if err != nil {
		return nil, err
	}
	w.file = f
	return w, nil
}

// NewWriter starts a capture on out, which must be positioned at its start.
// It fills in meta's field columns and writes the schema, metadata and probe
// dictionary at once, so that even a capture killed before its first batch
// can be opened.
func NewWriter(out io.Writer, meta *Meta, opts WriterOptions) (*Writer, error) {
	return newWriter(out, meta, opts, nil)
}

// newWriter is NewWriter, its batches going to the ring flight if not nil.
func newWriter(out io.Writer, meta *Meta, opts WriterOptions, flight *flightRing) (*Writer, error) {
	if opts.Compression == "" {
		opts.Compression = Zstd
	}
	if _, err := ParseCompression(string(opts.Compression)); err != nil {
		return nil, err
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = DefaultBatchRows
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	meta.SchemaVersion = SchemaVersion
	meta.Compression = string(opts.Compression)
	meta.Counts = nil // the footer carries the Writer's own
	fieldCols, err := meta.assignColumns()
	if err != nil {
		return nil, err
	}
	js, err := meta.encode()
	if err != nil {
		return nil, err
	}

	w := &Writer{meta: meta, opts: opts, out: newPosWriter(out), flight: flight}
	dtype := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}
	fields := []arrow.Field{
		{Name: "time", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cpu", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "pid", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "tid", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "comm", Type: arrow.BinaryTypes.StringView},
		{Name: "probe", Type: dtype},
		{Name: "lost", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}
	colIndex := map[string]int{}
	for _, f := range fieldCols {
		colIndex[f.Column] = len(fields)
		fields = append(fields, arrow.Field{Name: f.Column, Type: f.Type.arrow(), Nullable: true})
	}
	md := arrow.NewMetadata([]string{MetadataKey}, []string{js})
	w.schema = arrow.NewSchema(fields, &md)
	w.none = noRows(len(fields))

	for _, p := range meta.Probes {
		var l probeLayout
		for _, f := range p.Fields {
			l.cols = append(l.cols, colIndex[f.Column])
		}
		w.layouts = append(w.layouts, l)
	}

	// A batch's columns are allocated for its most rows at once, so bound
	// the rows by the bytes of a row, whatever the probes record.
	types := []Type{Int64, Uint16, Uint32, Uint32, String, Uint16, Uint64}
	for _, f := range fieldCols {
		types = append(types, f.Type)
	}
	rowBytes := 0
	for _, t := range types {
		rowBytes += colWidth(t)
		w.widths = append(w.widths, colWidth(t))
	}
	w.counts.reset(meta.Probes)
	w.rows = min(opts.BatchRows, max(1, maxBatchColumnBytes/rowBytes))
	newBatch := func() *batch {
		b := &batch{cols: make([]colBuf, len(fields)), data: make([]arrowipc.ColumnData, len(fields))}
		for i, t := range types {
			b.cols[i] = newColBuf(t, i >= ColLost, w.rows)
		}
		return b
	}
	codec, copts := ipcCodec(opts.Compression)
	if w.aw, err = arrowipc.NewWriter(w.out, w.schema, meta.ProbeNames(), codec, copts...); err != nil {
		return nil, err
	}
	// An empty first batch puts schema, metadata and dictionary on disk now.
	w.cur = newBatch()
	if err := w.encode(w.cur); err != nil {
		return nil, fmt.Errorf("write capture header: %w", err)
	}
	w.headerBytes = w.out.pos
	w.work = make(chan *batch, 1)
	w.free = make(chan *batch, 3)
	w.free <- newBatch()
	w.free <- newBatch()
	w.done = make(chan struct{})
	go w.encoder()
	return w, nil
}

// Meta returns the capture's metadata, with field columns filled in.
// Switch writes it as it is then: a caller may change its start times and
// Extra (not its probes) for the next file.
func (w *Writer) Meta() *Meta { return w.meta }

// LastTime is the time of the last event appended (not of a loss record),
// 0 before the first.
func (w *Writer) LastTime() int64 { return w.lastTime }

// Append adds one event. It returns an error only when a batch had to be
// written and writing failed (or an earlier write had failed).
func (w *Writer) Append(e *Event) error {
	if int(e.Probe) >= len(w.layouts) {
		return fmt.Errorf("event for probe %d: capture has %d probes", e.Probe, len(w.layouts))
	}
	b := w.cur
	i := b.n
	if i == 0 {
		w.since = time.Now()
	}
	c := b.cols
	binary.LittleEndian.PutUint64(c[ColTime].data[8*i:], uint64(e.Time))
	binary.LittleEndian.PutUint16(c[ColCPU].data[2*i:], e.CPU)
	binary.LittleEndian.PutUint32(c[ColPID].data[4*i:], e.PID)
	binary.LittleEndian.PutUint32(c[ColTID].data[4*i:], e.TID)
	// A thread's events come in runs: reuse the previous row's view when
	// the raw comm is the same, skipping the NUL search, UTF-8 check and
	// interning (the cache is cleared when a new batch begins).
	comm := e.Comm
	if cd := c[ColComm].data; i > 0 && w.lastComm != nil && string(comm) == string(w.lastComm) {
		copy(cd[16*i:16*i+16], cd[16*i-16:16*i])
		comm = nil
	} else {
		w.lastComm = append(w.lastComm[:0], comm...)
		if j := bytes.IndexByte(comm, 0); j >= 0 {
			comm = comm[:j]
		}
		if !utf8.Valid(comm) {
			comm = bytes.ToValidUTF8(comm, []byte("\uFFFD"))
		}
		c[ColComm].putString(i, comm)
	}
	binary.LittleEndian.PutUint16(c[ColProbe].data[2*i:], e.Probe)
	// lost and the other probes' fields are null: columnData fills them.
	for fi, ci := range w.layouts[e.Probe].cols {
		col := &c[ci]
		if col.typ == String {
			s := e.Strs[fi]
			if !utf8.Valid(s) {
				s = bytes.ToValidUTF8(s, []byte("\uFFFD"))
			}
			col.putString(i, s)
			b.strLen += len(s)
		} else {
			col.putValid(i, e.Ints[fi])
		}
	}
	b.strLen += len(comm)
	b.n++
	w.lastTime = e.Time
	if w.events++; w.events&1023 == 0 {
		w.Stats.Events.Store(w.events)
	}
	if b.n >= w.rows || b.strLen >= w.opts.BatchBytes {
		return w.Flush()
	}
	return nil
}

// AddStacks adds entries to the capture's stack table (StackTable): those
// it does not hold yet are written with the next batch, so a recorder
// adds the stacks, mappings and symbols an event needs before it appends
// the event. A part too large for one batch's metadata goes in parts, in
// batches of no rows just before that batch. The Writer keeps d's entries
// (not the frames of its stacks, which it shares): the caller may reuse d
// but not change the frames.
func (w *Writer) AddStacks(d *StackTable) {
	if d.Empty() {
		return
	}
	if w.stacks == nil {
		w.stacks = new(StackTable)
	}
	w.stacks.Add(d)
}

// addOwnStacks is AddStacks of a table the Writer may keep as it is, with
// no copy, when it holds none yet: the caller no longer changes t.
func (w *Writer) addOwnStacks(t *StackTable) {
	if w.stacks.Empty() && !t.Empty() {
		t.index = nil
		w.stacks = t
		return
	}
	w.AddStacks(t)
}

// pending returns the stack table entries added since a batch last took
// them (nil if there are none) and marks them taken. The table returned
// shares the entries' arrays, which AddStacks only appends to past its
// slices: the encoder reads it while the appending goroutine goes on.
func (w *Writer) pending() *StackTable {
	t, l := w.stacks, w.sent
	if t == nil {
		return nil
	}
	w.sent = t.lengths()
	p := &StackTable{
		Stacks:    t.Stacks[l.stacks:len(t.Stacks):len(t.Stacks)],
		Objects:   t.Objects[l.objects:len(t.Objects):len(t.Objects)],
		Maps:      t.Maps[l.maps:len(t.Maps):len(t.Maps)],
		Symbols:   t.Symbols[l.symbols:len(t.Symbols):len(t.Symbols)],
		Processes: t.Processes[l.processes:len(t.Processes):len(t.Processes)],
	}
	if p.Empty() {
		return nil
	}
	return p
}

// Lost records that n events of probe were lost on cpu at about time t.
// Loss records are rows with a non-null lost column and null fields.
func (w *Writer) Lost(probe uint16, cpu uint16, t int64, n uint64) error {
	if int(probe) >= len(w.layouts) {
		return fmt.Errorf("loss for probe %d: capture has %d probes", probe, len(w.layouts))
	}
	b := w.cur
	if b.n == 0 {
		w.since = time.Now()
	}
	i := b.n
	c := b.cols
	c[ColTime].put(i, uint64(t))
	c[ColCPU].put(i, uint64(cpu))
	c[ColPID].put(i, 0)
	c[ColTID].put(i, 0)
	c[ColComm].putString(i, nil)
	w.lastComm = nil
	c[ColProbe].put(i, uint64(probe))
	c[ColLost].putValid(i, n)
	b.n++
	w.Stats.Lost.Add(n)
	if b.n >= w.rows {
		return w.Flush()
	}
	return nil
}

// Tick writes the current batch if its first event is older than MaxAge; a
// recorder calls it from its drain loop so that quiet periods still reach disk.
func (w *Writer) Tick(now time.Time) error {
	w.Stats.Events.Store(w.events)
	if w.cur.n > 0 && now.Sub(w.since) >= w.opts.MaxAge {
		return w.Flush()
	}
	return w.Err()
}

// Flush hands the current batch to the encoder goroutine; it waits only if
// two batches are already waiting to be written.
func (w *Writer) Flush() error {
	w.Stats.Events.Store(w.events)
	if err := w.Err(); err != nil {
		return err
	}
	if w.cur.n == 0 {
		return nil
	}
	w.cur.stacks = w.pending()
	w.cur.forged, w.forged = w.forged, ""
	w.handed += uint64(w.cur.n)
	w.work <- w.cur
	w.cur = <-w.free
	return w.Err()
}

// Projected estimates the size the current file will have once the rows
// appended to it so far, and more rows after them, are written and the
// file is closed: the bytes written, the rows not written yet at the
// bytes a row of this file's batches took (or, before its first batch,
// of the file before Switch), and a footer as large as the file's header
// (it repeats the schema and the metadata). Call it from the appending
// goroutine.
func (w *Writer) Projected(more uint64) int64 {
	// The rows before the bytes: the encoder adds a batch to the bytes
	// first, so that a batch written between the two loads counts twice
	// (an overestimate by a batch), never not at all.
	written := w.rowsWritten.Load()
	rowBytes := w.rowBytes.Load()
	bytes := w.Stats.Bytes.Load()
	perRow := w.prevPerRow
	if written > 0 {
		perRow = float64(rowBytes) / float64(written)
	}
	pending := float64(w.FileRows() - min(written, w.FileRows()) + more)
	return bytes + int64(perRow*pending) + w.headerBytes
}

// FileRows returns the rows appended to the current file (since Switch),
// written or not. Call it from the appending goroutine.
func (w *Writer) FileRows() uint64 { return w.handed + uint64(w.cur.n) }

// Err returns the first error the encoder met, if any.
func (w *Writer) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

func (w *Writer) setErr(err error) {
	w.errMu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.errMu.Unlock()
}

func (w *Writer) encoder() {
	defer close(w.done)
	for b := range w.work {
		if w.Err() == nil {
			if err := w.encode(b); err != nil {
				w.setErr(err)
			}
		}
		if w.Err() != nil {
			w.countUnwritten(b)
		}
		for i := range b.cols {
			b.cols[i].reset(b.n)
		}
		b.n, b.strLen, b.stacks = 0, 0, nil
		w.free <- b
	}
}

// countUnwritten adds the events of b, a batch that did not reach the
// file whole, to w.unwritten.
func (w *Writer) countUnwritten(b *batch) {
	if w.unwritten == nil {
		w.unwritten = make([]uint64, len(w.layouts))
	}
	probe, lost := b.cols[ColProbe].data, b.cols[ColLost].valid
	for i := 0; i < b.n; i++ {
		if lost[i>>3]&(1<<(i&7)) != 0 {
			continue // a loss record, not an event
		}
		if p := int(binary.LittleEndian.Uint16(probe[2*i:])); p < len(w.unwritten) {
			w.unwritten[p]++
		}
	}
}

// Unwritten returns, after Close, how many events of each probe (by id)
// were appended but are not in the file's complete batches because a
// write failed: the file holds the events appended less these. It is nil
// when every write succeeded.
func (w *Writer) Unwritten() []uint64 { return w.unwritten }

// encode writes one batch and pushes it to the file. The stack table part
// it needs goes with it, or, when larger than one part (maxPartJSON), its
// last part does and the others go just before it, each in a batch of no
// rows: readers unite all the parts before they use the table, and a file
// cut short keeps every part that the batches it keeps need.
func (w *Writer) encode(b *batch) error {
	for i := range b.cols {
		b.cols[i].columnData(&b.data[i], b.n)
	}
	part := b.forged
	if part == "" && b.stacks != nil {
		var err error
		part, err = encodeStackPartsAhead(b.stacks, func(p string) error { return w.write(p, 0, w.none) })
		if err != nil {
			return err
		}
	}
	b.forged, b.stacks = "", nil
	return w.write(part, b.n, b.data)
}

// write writes a batch of rows rows whose columns are cols, with the
// stack table part part if it is not empty, and pushes it to the file.
func (w *Writer) write(part string, rows int, cols []arrowipc.ColumnData) error {
	if part != "" {
		w.aw.SetBatchMetadata(arrow.NewMetadata([]string{StackTableKey}, []string{part}))
	}
	before := w.out.pos
	err := w.aw.WriteBatch(rows, cols)
	if err == nil {
		err = w.out.Flush()
	}
	if err != nil {
		return fmt.Errorf("write batch: %w", err)
	}
	if w.flight != nil {
		// The ring keeps the message; no file, no footer to tally.
		err = w.flight.added(w.aw.LastBatch(), rows, cols[ColTime].Buffers[1])
		w.aw.ForgetBatches()
		w.Stats.Batches.Add(1)
		return err
	}
	w.counts.addBatch(rows, cols, w.widths, part != "")
	w.Stats.Batches.Add(1)
	w.Stats.Bytes.Store(w.out.pos)
	if rows > 0 { // after Bytes: Projected may count a batch twice, never not at all
		w.rowBytes.Add(w.out.pos - before)
		w.rowsWritten.Add(uint64(rows))
	}
	return nil
}

// encodeStackPartsAhead encodes t in parts of at most maxPartJSON bytes of
// JSON, passes all but the last to ahead, in order, and returns the last.
func encodeStackPartsAhead(t *StackTable, ahead func(part string) error) (last string, err error) {
	err = encodeStackParts(t, maxPartJSON, func(p string) error {
		if last != "" {
			if err := ahead(last); err != nil {
				return err
			}
		}
		last = p
		return nil
	})
	return last, err
}

// noRows is the columns of a batch of no rows, for a schema of n fields.
func noRows(n int) []arrowipc.ColumnData {
	cols := make([]arrowipc.ColumnData, n)
	for i := range cols {
		cols[i].Buffers = make([][]byte, 2)
	}
	return cols
}

// ColumnBytes returns, after Close, how many bytes of the file each column
// takes (its compressed buffers in all record batches, with their length
// prefixes and padding), keyed by column name; a column's validity bitmaps,
// when it has nulls, are counted apart under its name and ".validity". The
// rest of the file is the schema, the dictionary, the batches' metadata and
// the footer.
func (w *Writer) ColumnBytes() map[string]int64 {
	if !w.closed {
		return nil
	}
	m := map[string]int64{}
	valid := w.aw.ValidityBytes()
	for i, n := range w.aw.ColumnBytes() {
		name := w.schema.Field(i).Name
		m[name] = n - valid[i]
		if valid[i] > 0 {
			m[name+".validity"] = valid[i]
		}
	}
	return m
}

// Close writes the last batch and the file footer and closes the file.
func (w *Writer) Close() error {
	if w.closed {
		return w.Err()
	}
	w.closed = true
	w.Stats.Events.Store(w.events)
	// A stack table part with no rows left to carry it goes in a batch
	// of none.
	if w.Err() == nil {
		w.cur.stacks = w.pending()
		w.cur.forged, w.forged = w.forged, ""
		if w.cur.n > 0 || w.cur.stacks != nil || w.cur.forged != "" {
			w.work <- w.cur
		}
	}
	close(w.work)
	<-w.done
	if w.Err() != nil {
		w.countUnwritten(w.cur) // never sent
	}
	err := w.Err()
	if err == nil {
		err = w.footerMeta()
		if err == nil {
			err = w.aw.Close()
		}
		if err == nil {
			err = w.out.Flush()
		}
		if err != nil {
			err = fmt.Errorf("write footer: %w", err)
		}
		w.Stats.Bytes.Store(w.out.pos)
	}
	if f, ok := w.file.(*os.File); ok && err == nil {
		// A pipe or a terminal cannot be synced (EINVAL): nothing to do.
		if err = f.Sync(); errors.Is(err, syscall.EINVAL) {
			err = nil
		}
	}
	if w.file != nil {
		if cerr := w.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// posWriter buffers writes and tracks the position, which is all the Arrow
// file writer needs from a Seeker; batches reach the kernel at each Flush.
type posWriter struct {
	bw  *bufio.Writer
	pos int64
}

func newPosWriter(w io.Writer) *posWriter { return &posWriter{bw: bufio.NewWriterSize(w, 1<<20)} }

func (p *posWriter) Write(b []byte) (int, error) {
	n, err := p.bw.Write(b)
	p.pos += int64(n)
	return n, err
}

func (p *posWriter) Seek(off int64, whence int) (int64, error) {
	if off != 0 || whence != io.SeekCurrent {
		return 0, errors.New("capture writer only appends")
	}
	return p.pos, nil
}

func (p *posWriter) Flush() error { return p.bw.Flush() }
