package export

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/schema"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/arrowipc"
	"github.com/bpftape/bpftape/internal/outfile"
	"github.com/bpftape/bpftape/replay"
)

// RowGroupRows is how many rows a Parquet row group holds at most; rows
// wait in Arrow builders until then, which bounds memory per output file.
const RowGroupRows = 1 << 17

// HiveNull is the folder value Hive, Spark and DuckDB read as NULL: the host
// of a merged capture's loss records, which do not say which host lost them.
const HiveNull = "__HIVE_DEFAULT_PARTITION__"

// WriteParquet writes the selected rows of c as one zstd Parquet file with
// the capture's column names and integer types and its Meta under the
// footer key "bpftape"; string_view columns (comm, string fields) become
// utf8 (Parquet has no string view), and probe is a utf8 column that Arrow
// readers take as a dictionary (the stored Arrow schema, ARROW:schema). A
// stack field is a utf8 column of folded frames, null for no stack, or with
// Options.StackIDs a uint64 column of ids. The lost column is always there,
// null on events, whatever Options.Lost selects (see LostDrop).
func WriteParquet(c *replay.Capture, w io.Writer, o Options) (*Result, *replay.Pass, error) {
	o.Lost, o.Format = o.lostMode(), Parquet
	cols := columns(c, &o)
	names, err := nameStacks(c, &o, cols)
	if err != nil {
		return nil, nil, err
	}
	pw, err := newPQWriter(w, cols, c, &o)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{}
	var pass *replay.Pass
	if c.Spans(&o.Rows) && o.Lost != LostOnly {
		// No row filter: a stretch of events at a time, and the loss
		// records one by one where they are kept. The writer copies the
		// strings it keeps, so that the batches' string memory is
		// reused: 235 of the 317 MB an export of the 20M-event
		// synthesized capture allocated were new comm columns.
		pass, err = c.ScanSpansLost(nil, func(b *format.Batch, lo, hi int) error {
			res.Events += uint64(hi - lo)
			return pw.addSpan(b, lo, hi)
		}, func(b *format.Batch, i int) error {
			if o.Lost == LostDrop {
				return nil
			}
			count(res, true)
			return pw.add(b, i)
		})
	} else {
		pass, err = walk(c, &o, func(b *format.Batch, i int, lost bool) error {
			count(res, lost)
			return pw.add(b, i)
		})
	}
	if cerr := pw.close(); err == nil {
		err = cerr
	}
	stackNotes(res, names)
	return res, pass, err
}

// WritePartitioned writes the selected rows of c as hive-style
// dir/host=HOST/probe=PROBE/part-N.parquet files (fixed columns and the
// probe's fields; host and probe come from the folders), so that DuckDB or
// Spark reads many hosts' exports under one dir as one table. HOST is the
// event's host field in a merged capture, else Meta.Host (NULL when
// redacting), and N the first free number, so that exporting more captures
// into dir adds to it; the rows of a part already there (its
// SelectionKey) are refused (ErrExported).
//
// A run writes one part file per partition. At most MaxOpenParts part
// writers are open at once, sharing PartsMemory for the rows they gather:
// the first pass over c writes the first MaxOpenParts partitions it meets
// and counts the rest, and each later pass writes the next MaxOpenParts
// and stops after their last row, so that a capture of P partitions is
// read ceil(P/MaxOpenParts) times. Closing a part to open another would
// write a file per row when more partitions than that interleave (a
// recording of k:vfs_* has hundreds of probes); spilling rows to
// temporary files would bound memory too, at the cost of a second file
// format. The Result and the Pass are the first pass's. The part files
// are put in place at the end, and only if every one was written.
func WritePartitioned(c *replay.Capture, dir string, o Options) (res *Result, pass *replay.Pass, err error) {
	o.Lost, o.Format = o.lostMode(), Parquet
	if o.selection, err = selectionKey(c, &o); err != nil {
		return nil, nil, err
	}
	if err := notExported(dir, o.selection); err != nil {
		return nil, nil, err
	}
	m := c.Meta()
	all := columns(c, &o)
	names, err := nameStacks(c, &o, all)
	if err != nil {
		return nil, nil, err
	}
	// Per probe: its columns, and the schema index of its host field, if any.
	probeCols := make([][]column, len(m.Probes))
	hostCol := make([]int, len(m.Probes))
	merged := false
	for pi, p := range m.Probes {
		hostCol[pi] = -1
		own := map[string]bool{}
		hi := m.HostFieldIndex(&m.Probes[pi])
		for fi, f := range p.Fields {
			if fi == hi && !o.Redact {
				hostCol[pi] = c.Column(f.Column)
				merged = true
				continue
			}
			own[f.Column] = true
		}
		for _, col := range all {
			if col.fixed == format.ColProbe || (col.fixed < 0 && !own[col.name]) {
				continue
			}
			probeCols[pi] = append(probeCols[pi], col)
		}
	}
	keyOf := func(b *format.Batch, i int) [2]string {
		host := m.Host
		switch pi := b.Probe[i]; {
		case o.Redact:
			host = "" // the folder host=__HIVE_DEFAULT_PARTITION__: NULL
		case hostCol[pi] >= 0 && b.Col(hostCol[pi]).Valid(i):
			host = b.Col(hostCol[pi]).Str(i)
		case merged:
			host = HiveNull
		}
		return [2]string{host, m.Probes[b.Probe[i]].Name}
	}

	type part struct {
		key   [2]string
		pass  int    // the pass that writes it
		rows  uint64 // its rows, as the first pass counted them
		wrote uint64
		pw    *pqWriter // while it is open
		f     *outfile.File
	}
	parts := map[[2]string]*part{}
	var order []*part // every part, in the order met, to commit
	var open []*part
	var last []uint64 // per pass, the number of the last row it writes
	res = &Result{}
	defer func() {
		stackNotes(res, names)
		// Every part is finished, then put in place only if all are.
		for _, p := range order {
			if err == nil && p.f != nil {
				if err = p.f.Commit(); err == nil {
					res.Files = append(res.Files, p.f.Name())
				}
			}
		}
		if err != nil {
			for _, p := range order {
				if p.f != nil {
					p.f.Discard()
				}
			}
			for _, path := range res.Files {
				os.Remove(path) // parts this export committed
			}
			res.Files = nil
		}
	}()
	write := func(p *part, b *format.Batch, i int) error {
		if p.pw == nil {
			f, err := createPart(dir, p.key[0], p.key[1])
			if err != nil {
				return err
			}
			p.f = f
			// The page writer writes in small pieces: give it a buffer.
			bw := bufio.NewWriterSize(f, 1<<16)
			pw, err := newPQWriter(bw, probeCols[b.Probe[i]], c, &o)
			if err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			pw.buf = bw
			p.pw = pw
			open = append(open, p)
			res.OpenParts = max(res.OpenParts, len(open))
			for _, q := range open {
				if err := q.pw.limit(PartsMemory / len(open)); err != nil {
					return fmt.Errorf("%s: %w", dir, err)
				}
			}
		}
		p.wrote++
		return p.pw.add(b, i)
	}
	// closeOpen finishes the open parts and lets their writers go.
	closeOpen := func() error {
		var err error
		for _, p := range open {
			if cerr := p.pw.close(); err == nil && cerr != nil {
				err = fmt.Errorf("%s: %w", dir, cerr)
			}
			p.pw = nil
		}
		open = open[:0]
		return err
	}

	var row uint64
	pass, err = walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		count(res, lost)
		row++
		key := keyOf(b, i)
		p := parts[key]
		if p == nil {
			p = &part{key: key, pass: len(parts) / MaxOpenParts}
			parts[key] = p
			order = append(order, p)
			if p.pass == len(last) {
				last = append(last, 0)
			}
		}
		p.rows++
		last[p.pass] = row
		if p.pass > 0 {
			return nil
		}
		return write(p, b, i)
	})
	if err == nil {
		err = closeOpen()
	}
	for n := 1; n < len(last) && err == nil; n++ {
		row = 0
		_, err = walk(c, &o, func(b *format.Batch, i int, lost bool) error {
			if row++; row > last[n] {
				return errPassDone
			}
			p := parts[keyOf(b, i)]
			if p == nil {
				return errChanged
			}
			if p.pass != n {
				return nil
			}
			return write(p, b, i)
		})
		if errors.Is(err, errPassDone) {
			err = nil
		}
		if err == nil {
			err = closeOpen()
		}
	}
	for _, p := range order {
		if err == nil && p.wrote != p.rows {
			err = errChanged
		}
	}
	if errors.Is(err, errChanged) {
		err = fmt.Errorf("%s: %w", c.Name, err)
	}
	return res, pass, err
}

var (
	// errPassDone ends a pass of WritePartitioned after its last row.
	errPassDone = errors.New("pass done")
	// errChanged is a capture that read differently the second time.
	errChanged = errors.New("the capture changed while it was exported")
)

// MaxOpenParts bounds the part files a partitioned export writes at once.
const MaxOpenParts = 64

// PartsMemory is what the rows gathered for the next row groups of a
// partitioned export's open parts take at most, shared equally among them
// (pqWriter.limit); their buffers, grown by doubling, may take up to twice
// as much. A part's row groups are smaller when many parts are open, but
// not smaller than PartsMemory/MaxOpenParts (2 MiB).
const PartsMemory = 128 << 20

// createPart starts a new part file in dir/host=H/probe=P/: a temporary
// file that WritePartitioned names part-N.parquet at its end, with the
// first free N, mode 0600, replacing no file.
func createPart(dir, host, probe string) (*outfile.File, error) {
	folder := filepath.Join(dir, "host="+hiveEscape(host), "probe="+hiveEscape(probe))
	if err := outfile.MkdirAll(dir, folder); err != nil {
		return nil, err
	}
	return outfile.CreateNumbered(folder, func(n int) string { return fmt.Sprintf("part-%d.parquet", n) })
}

// ErrExported is a partitioned export into a folder that already holds
// the rows it would write.
var ErrExported = errors.New("these rows of this capture were exported into the folder before")

// SelectionKey is the Parquet metadata key of a partitioned export's
// part: which rows of which capture the part holds, without saying what
// the metadata holds. Its value is "events:HASH losses:HASH", each HASH
// of the capture's metadata and the selection of that kind of row (the
// filters for events, the window for loss records, which have no
// process), or "-" for a kind the export left out (--lost).
const SelectionKey = "bpftape.selection"

// selectionKey is the SelectionKey value of the rows o selects from c.
func selectionKey(c *replay.Capture, o *Options) (string, error) {
	md := c.Schema().Metadata()
	meta := md.Values()[md.FindKey(format.MetadataKey)]
	hash := func(sel any) (string, error) {
		b, err := json.Marshal(sel)
		if err != nil {
			return "", err
		}
		h := sha256.New()
		h.Write([]byte(meta))
		h.Write([]byte{0})
		h.Write(b)
		return hex.EncodeToString(h.Sum(nil)[:16]), nil
	}
	f := o.Rows // one filter however its lists are given
	f.PIDs, f.TIDs, f.Comms = sortedSet(f.PIDs), sortedSet(f.TIDs), sortedSet(f.Comms)
	events, losses := "-", "-"
	var err error
	if o.Lost != LostOnly {
		if events, err = hash(f); err != nil {
			return "", err
		}
	}
	if o.Lost != LostDrop {
		if losses, err = hash([2]time.Duration{f.From, f.To}); err != nil {
			return "", err
		}
	}
	return "events:" + events + " losses:" + losses, nil
}

func sortedSet[T cmp.Ordered](list []T) []T {
	return slices.Compact(slices.Sorted(slices.Values(list)))
}

// sameRows reports whether two SelectionKey values share a kind of row
// of one selection: an export of both would hold those rows twice.
func sameRows(a, b string) bool {
	as, bs := strings.Fields(a), strings.Fields(b)
	if len(as) != 2 || len(bs) != 2 {
		return false
	}
	for k := range as {
		if _, h, _ := strings.Cut(as[k], ":"); h != "-" && as[k] == bs[k] {
			return true
		}
	}
	return false
}

// notExported refuses a folder of partitioned exports that has parts of
// the same rows (dir/host=*/probe=*/part-*.parquet, sameRows): a query of
// the folder would count them twice. A part it cannot read is not one.
func notExported(dir, selection string) error {
	parts, _ := filepath.Glob(filepath.Join(dir, "host=*", "probe=*", "part-*.parquet"))
	var same []string
	for _, path := range parts {
		if sameRows(partSelection(path), selection) {
			same = append(same, path)
		}
	}
	if len(same) == 0 {
		return nil
	}
	list := strings.Join(same[:min(len(same), 3)], ", ")
	if len(same) > 3 {
		list += fmt.Sprintf(" and %d more", len(same)-3)
	}
	return fmt.Errorf("%s: %w, in %d part files (%s): remove them, or export into another folder", dir, ErrExported, len(same), list)
}

// partSelection reads the SelectionKey of a Parquet file's footer, or "".
func partSelection(path string) (sel string) {
	defer func() {
		if recover() != nil { // a reader's panic on a damaged footer
			sel = ""
		}
	}()
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return ""
	}
	defer r.Close()
	if v := r.MetaData().KeyValueMetadata().FindValue(SelectionKey); v != nil {
		return *v
	}
	return ""
}

// hiveEscape percent-encodes what may not appear in a partition folder
// value, as Hive does (DuckDB and Spark decode it), and non-ASCII bytes.
func hiveEscape(s string) string {
	if s == "" {
		return HiveNull
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || c < 0x20 || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// pqWriter gathers rows in column buffers and writes them as Parquet row
// groups (pqFile). Not pqarrow: it imports
// Arrow's compute and flight packages, and through them gRPC and
// protobuf, whose package inits every bpftape command paid at start
// (bpftape --version 39.5 ms against 25.2 without them, binary 50 MB
// against 24 MB). The Arrow schema pqarrow stores under ARROW:schema is
// written here too (arrowipc.SchemaStream), so that Arrow readers (polars,
// pyarrow) see the same types: probe a dictionary, comm utf8.
type pqWriter struct {
	pf *pqFile
	// create makes pf, at the first row group or at close, with the
	// compression chosen (see smallPart).
	create func(codec compress.Compression) error
	codec  compress.Compression
	cols   []*pqColumn
	n      int
	file   io.Closer     // of a partition, closed after the footer
	buf    *bufio.Writer // in front of file
	closed bool
	sink   *sink // the output, with its first write error
	failed error // set once the Parquet writer failed: it is not called again
	// size is what the gathered rows take in the column buffers; a row
	// group is written once it reaches maxBytes, when that is not 0.
	size     int
	maxBytes int
	rowBytes int // what a row takes in the buffers, but its strings' bytes
}

// pqColumn is one column's values for the current row group: ints (INT32
// or INT64 by physical type), byte arrays (bytes, slices of arena), or for
// the probe, comm and stack columns indices into the row group's
// dictionary (of the capture's probe names, of copies in arena, of the
// stack namer's strings), and for a nullable column its definition levels
// (1 set, 0 null). kind says where a
// row's value comes from: add switches on it rather than calling a
// function per cell.
//
// The arena is a list of chunks rather than one slice grown by append:
// the values cut from a slice keep it when append moves on to a larger
// one, so that a grown arena held several times its bytes (a partitioned
// export of 64 parts, 1.5 million events with 280-byte strings, peaked at
// 1.4 GB resident, and at 480 MB with chunks).
type pqColumn struct {
	kind     pqKind
	ci       int                 // schema index of a field column
	names    *replay.StackNamer  // of a stack column written as frames
	probes   []parquet.ByteArray // of the probe column: the names
	phys     parquet.Type
	nullable bool
	i32      []int32
	i64      []int64
	bytes    []parquet.ByteArray
	arena    []byte // the current chunk
	chunks   int    // the bytes of the chunks of the row group
	defs     []int16
	// last is the last command name comm added, as its copy in dict,
	// and lastSlice that copy: a repeated name costs a comparison.
	last      string
	lastSlice parquet.ByteArray
	// The last stack named, by id and pid: whether it has frames, and
	// if so their index in dict; lastSet says the memo holds (not in a
	// new row group, whose dictionary starts empty).
	lastID  uint64
	lastPID uint32
	lastOK  bool
	lastSet bool
	// A dictionary column (probe, comm, stack frames) gathers each
	// non-null row's index into dict, the row group's distinct values
	// in order of first use, which pqFile writes as its dictionary page:
	// Arrow's dictionary encoder hashed each row's value again and
	// boxed it in an interface, an allocation a row, which took a third
	// of an export's time. A string field makes its dictionary when its
	// row group is written (dictOf).
	idx      []int32
	dict     []parquet.ByteArray
	dictSize int              // the bytes of dict's values
	slots    map[string]int32 // value -> index in dict (comm, stacks)
	probeIdx []int32          // probe id -> index in dict + 1 (probe)
	lastIdx  int32            // dict index of last (comm) or of the last stack
}

// pqKind is where a pqColumn's values come from.
type pqKind uint8

const (
	pqTime pqKind = iota
	pqCPU
	pqPID
	pqTID
	pqComm
	pqProbe
	pqLost
	pqInt   // an integer field
	pqStr   // a string field
	pqStack // a stack field written as folded frames
)

func (c *pqColumn) null() {
	c.defs = append(c.defs, 0)
}

func (c *pqColumn) set() {
	if c.nullable {
		c.defs = append(c.defs, 1)
	}
}

// int appends v, as the column's physical type holds it (an unsigned value
// as the same bits).
func (c *pqColumn) int(v uint64) {
	c.set()
	if c.phys == parquet.Types.Int32 {
		c.i32 = append(c.i32, int32(v))
	} else {
		c.i64 = append(c.i64, int64(v))
	}
}

// str appends a copy of s, made valid UTF-8 (Parquet utf8 must be); it
// returns the bytes it copied. A string field's values are copied each,
// so that their memory is what limit bounds.
func (c *pqColumn) str(s string) int {
	c.set()
	c.bytes = append(c.bytes, c.copyStr(s))
	return len(s)
}

// copyStr returns a copy of s in the arena, made valid UTF-8. An empty
// string is an empty slice, not nil, which the statistics would take for
// no value.
func (c *pqColumn) copyStr(s string) parquet.ByteArray {
	if s == "" {
		return parquet.ByteArray{}
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(c.arena)+len(s) > cap(c.arena) {
		c.arena = make([]byte, 0, max(arenaChunk, len(s)))
		c.chunks += cap(c.arena)
	}
	start := len(c.arena)
	c.arena = append(c.arena, s...)
	return c.arena[start:len(c.arena):len(c.arena)]
}

// comm appends the dictionary index of command name s, made valid UTF-8
// (Parquet utf8 must be), copied into the arena when new to the row
// group; it returns the bytes it copied.
func (c *pqColumn) comm(s string) int {
	if s == c.last && c.lastSlice != nil {
		c.idx = append(c.idx, c.lastIdx)
		return 0
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	n := 0
	k, ok := c.slots[s]
	if !ok {
		v := c.copyStr(s)
		k, n = c.dictAdd(v, unsafe.String(unsafe.SliceData(v), len(v))), len(s)
	}
	// The copy, not s, which is the batch's and changes with it.
	v := c.dict[k]
	c.last, c.lastSlice, c.lastIdx = unsafe.String(unsafe.SliceData(v), len(v)), v, k
	c.idx = append(c.idx, k)
	return n
}

// dictAdd adds value v, known as key, to the row group's dictionary, and
// returns its index.
func (c *pqColumn) dictAdd(v parquet.ByteArray, key string) int32 {
	k := c.dictAppend(v)
	c.slots[key] = k
	return k
}

// dictAppend appends v to the row group's dictionary and returns its index.
func (c *pqColumn) dictAppend(v parquet.ByteArray) int32 {
	c.dict = append(c.dict, v)
	c.dictSize += len(v)
	return int32(len(c.dict) - 1)
}

// probe appends the dictionary index of the name of probe id (empty past
// the capture's probes).
func (c *pqColumn) probe(id uint16) {
	k := min(int(id), len(c.probes))
	j := c.probeIdx[k] - 1
	if j < 0 {
		var v parquet.ByteArray
		if k < len(c.probes) {
			v = c.probes[k]
		}
		j = c.dictAppend(v)
		c.probeIdx[k] = j + 1
	}
	c.idx = append(c.idx, j)
}

// stack appends the dictionary index of the folded frames of stack id of
// row i of b, or null.
func (c *pqColumn) stack(b *format.Batch, i int, id uint64) {
	pid := b.PID[i]
	if !c.lastSet || id != c.lastID || pid != c.lastPID {
		s, ok := c.names.Folded(pid, b.Time[i], id)
		c.lastID, c.lastPID, c.lastOK, c.lastSet = id, pid, ok, true
		if ok {
			// The namer keeps its strings: they are used as they are
			// (valid UTF-8, textsafe escapes every other byte), not
			// copied.
			k, seen := c.slots[s]
			if !seen {
				k = c.dictAdd(parquet.ByteArray(unsafe.Slice(unsafe.StringData(s), len(s))), s)
			}
			c.lastIdx = k
		}
	}
	if !c.lastOK {
		c.null()
		return
	}
	c.set()
	c.idx = append(c.idx, c.lastIdx)
}

func (c *pqColumn) reset() {
	c.i32, c.i64, c.bytes, c.defs = c.i32[:0], c.i64[:0], c.bytes[:0], c.defs[:0]
	c.arena, c.chunks = nil, 0 // the written values may still point into it
	c.last, c.lastSlice = "", nil
	c.idx, c.dict, c.dictSize, c.lastSet = c.idx[:0], nil, 0, false
	clear(c.slots)
	clear(c.probeIdx)
}

// dictKind reports whether the column is written through its dictionary.
func (c *pqColumn) dictKind() bool {
	return c.kind == pqProbe || c.kind == pqComm || c.kind == pqStack
}

// dictPageLimit is the most a column chunk's dictionary takes before the
// writer falls back to plain values.
const dictPageLimit = 16 << 20

// arenaChunk is the size of an arena chunk, or of a longer value's own.
const arenaChunk = 64 << 10

// sliceHeader is the size of a parquet.ByteArray, which a []byte is.
const sliceHeader = 24

// held is what c's buffers take, used or not.
func (c *pqColumn) held() int {
	return 4*cap(c.i32) + 8*cap(c.i64) + sliceHeader*cap(c.bytes) + 2*cap(c.defs) + c.chunks +
		4*cap(c.idx) + sliceHeader*cap(c.dict)
}

// sink remembers the first error of the output that the Parquet writer writes to.
type sink struct {
	w   io.Writer
	err error
}

func (s *sink) Write(b []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(b)
	s.err = err
	return n, err
}

// call runs a Parquet writer call that writes. After a write error (a full
// disk) every later call is skipped, and the output's own error is the
// one returned; a panic of Arrow Go's page or metadata writers is taken
// back here too (its column writers, used before pqFile, dereferenced
// released page buffers after a write error).
func (p *pqWriter) call(what string, f func() error) (err error) {
	if p.failed != nil {
		return p.failed
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: parquet writer failed: %v", what, r)
		}
		if err != nil {
			if p.sink.err != nil {
				err = fmt.Errorf("%s: %w", what, p.sink.err)
			}
			p.failed = err
		}
	}()
	return f()
}

// arrowType is the Arrow type of a field column in the stored Arrow schema.
func arrowType(t format.Type) arrow.DataType {
	switch t {
	case format.Int8:
		return arrow.PrimitiveTypes.Int8
	case format.Int16:
		return arrow.PrimitiveTypes.Int16
	case format.Int32:
		return arrow.PrimitiveTypes.Int32
	case format.Int64:
		return arrow.PrimitiveTypes.Int64
	case format.Uint8:
		return arrow.PrimitiveTypes.Uint8
	case format.Uint16:
		return arrow.PrimitiveTypes.Uint16
	case format.Uint32:
		return arrow.PrimitiveTypes.Uint32
	case format.Uint64, format.UserStack, format.KernelStack:
		return arrow.PrimitiveTypes.Uint64 // a stack field written as ids
	}
	return arrow.BinaryTypes.String
}

// pqNode is the Parquet column of Arrow type dt, as pqarrow maps it: an
// integer as INT32 or INT64 with its width and sign, utf8 (or a dictionary
// of it) as a STRING byte array.
func pqNode(name string, dt arrow.DataType, nullable bool) (*schema.PrimitiveNode, error) {
	rep := parquet.Repetitions.Required
	if nullable {
		rep = parquet.Repetitions.Optional
	}
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	if dt.ID() == arrow.STRING {
		return schema.NewPrimitiveNodeLogical(name, rep, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok {
		return nil, fmt.Errorf("parquet: column %s: type %v", name, dt)
	}
	bits := fw.BitWidth()
	signed := false
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		signed = true
	}
	phys := parquet.Types.Int32
	if bits == 64 {
		phys = parquet.Types.Int64
	}
	return schema.NewPrimitiveNodeLogical(name, rep, schema.NewIntLogicalType(int8(bits), signed), phys, -1, -1)
}

func newPQWriter(w io.Writer, cols []column, c *replay.Capture, o *Options) (*pqWriter, error) {
	// The capture's metadata as it is in the file, or redacted.
	md := c.Schema().Metadata()
	js := []byte(md.Values()[md.FindKey(format.MetadataKey)])
	if o.Redact {
		meta, err := exportMeta(c.Meta(), o)
		if err != nil {
			return nil, err
		}
		if js, err = json.Marshal(meta); err != nil {
			return nil, err
		}
	}
	codec := compress.Codecs.Zstd
	switch o.Compression {
	case format.LZ4:
		// Arrow Go v15 writes Parquet's deprecated LZ4 codec, not LZ4_RAW.
		return nil, fmt.Errorf("parquet: compression lz4 is not supported: use zstd or none")
	case format.None:
		codec = compress.Codecs.Uncompressed
	}
	p := &pqWriter{}
	probes := c.Meta().ProbeNames()
	probeBytes := make([]parquet.ByteArray, len(probes))
	for k, name := range probes {
		probeBytes[k] = parquet.ByteArray(strings.ToValidUTF8(name, "\uFFFD"))
	}
	var fields []arrow.Field
	for _, col := range cols {
		var f arrow.Field
		pc := &pqColumn{ci: col.index}
		switch col.fixed {
		case format.ColTime:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Int64}
			pc.kind = pqTime
		case format.ColCPU:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint16}
			pc.kind = pqCPU
		case format.ColPID:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint32}
			pc.kind = pqPID
		case format.ColTID:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint32}
			pc.kind = pqTID
		case format.ColComm:
			f = arrow.Field{Name: col.name, Type: arrow.BinaryTypes.String}
			pc.kind = pqComm
		case format.ColProbe:
			// Written as a dictionary of the probes' names.
			f = arrow.Field{Name: col.name, Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}}
			pc.kind, pc.probes = pqProbe, probeBytes
		case format.ColLost:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint64, Nullable: true}
			pc.kind = pqLost
		default:
			if col.names != nil {
				f = arrow.Field{Name: col.name, Type: arrow.BinaryTypes.String, Nullable: true}
				pc.kind, pc.names = pqStack, col.names
				break
			}
			f = arrow.Field{Name: col.name, Type: arrowType(col.typ), Nullable: true}
			pc.kind = pqInt
			if f.Type.ID() == arrow.STRING {
				pc.kind = pqStr
			}
		}
		pc.nullable = f.Nullable
		if pc.dictKind() {
			pc.slots = map[string]int32{}
			pc.probeIdx = make([]int32, len(probeBytes)+1)
		}
		fields = append(fields, f)
		p.cols = append(p.cols, pc)
	}
	smd := arrow.NewMetadata([]string{format.MetadataKey}, []string{string(js)})
	as := arrow.NewSchema(fields, &smd)
	stream, err := arrowipc.SchemaStream(as)
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	nodes := make(schema.FieldList, len(fields))
	for k, f := range fields {
		n, err := pqNode(f.Name, f.Type, f.Nullable)
		if err != nil {
			return nil, fmt.Errorf("parquet schema: %w", err)
		}
		nodes[k] = n
		pc := p.cols[k]
		pc.phys = n.PhysicalType()
		// What a row takes in the column's buffers, but the bytes of the
		// strings it copies (add counts those).
		switch {
		case pc.dictKind():
			p.rowBytes += 4 // an index
		case pc.phys == parquet.Types.ByteArray:
			p.rowBytes += sliceHeader
		case pc.phys == parquet.Types.Int32:
			p.rowBytes += 4
		default:
			p.rowBytes += 8
		}
		if pc.nullable {
			p.rowBytes += 2
		}
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, nodes, -1)
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	kv := metadata.NewKeyValueMetadata()
	if err := kv.Append(format.MetadataKey, string(js)); err != nil {
		return nil, err
	}
	if err := kv.Append("ARROW:schema", base64.StdEncoding.EncodeToString(stream)); err != nil {
		return nil, err
	}
	if o.selection != "" {
		if err := kv.Append(SelectionKey, o.selection); err != nil {
			return nil, err
		}
	}
	p.sink = &sink{w: w}
	p.codec = codec
	p.create = func(codec compress.Compression) error {
		// What the metadata says of the pages pqFile writes: the
		// codec, the writer, and the encoding of the time column's
		// values (the others are plain or by dictionary).
		props := parquet.NewWriterProperties(
			parquet.WithCompression(codec),
			parquet.WithCreatedBy("bpftape"),
			parquet.WithEncodingFor("time", parquet.Encodings.DeltaBinaryPacked),
		)
		return p.call("write parquet header", func() (err error) {
			p.pf, err = newPQFile(p.sink, root, props, kv, codec)
			return err
		})
	}
	return p, nil
}

// smallPart is the number of rows under which a file whose rows all fit in
// one row group is written uncompressed: compression gains little there,
// and Arrow Go v15's zstd codec builds a new encoder (megabytes) for every
// page it compresses. A partitioned export of 2,000 parts of one row took
// 16.6 s of CPU with zstd, most of it in those encoders and the collection
// of their garbage.
const smallPart = 1024

// add appends row i of b to the columns; a row group is written once it
// has RowGroupRows rows, or takes maxBytes.
func (p *pqWriter) add(b *format.Batch, i int) error {
	size := p.rowBytes
	for _, c := range p.cols {
		switch c.kind {
		case pqTime:
			c.i64 = append(c.i64, b.Time[i])
		case pqCPU:
			c.i32 = append(c.i32, int32(b.CPU[i]))
		case pqPID:
			c.i32 = append(c.i32, int32(b.PID[i]))
		case pqTID:
			c.i32 = append(c.i32, int32(b.TID[i]))
		case pqComm:
			size += c.comm(b.Comm(i))
		case pqProbe:
			c.probe(b.Probe[i])
		case pqLost:
			if n, ok := b.Lost(i); ok {
				c.int(n)
			} else {
				c.null()
			}
		default:
			size += c.field(b, b.Col(c.ci), i)
		}
	}
	p.n++
	p.size += size
	if p.n >= RowGroupRows || p.maxBytes > 0 && p.size >= p.maxBytes {
		return p.flush()
	}
	return nil
}

// field appends row i of field column fc of b, or null; it returns the
// bytes of a string it copied.
func (c *pqColumn) field(b *format.Batch, fc *format.Column, i int) int {
	switch {
	case !fc.Valid(i):
		c.null()
	case c.kind == pqInt:
		c.int(uint64(fc.Int(i)))
	case c.kind == pqStr:
		return c.str(fc.Str(i))
	default:
		c.stack(b, i, uint64(fc.Int(i)))
	}
	return 0
}

// addSpan appends event rows [lo, hi) of b as add does one at a time, a
// column at a time: a loop over a column's rows in place of a switch for
// each of its cells, which took two thirds of add's time. Row groups end
// where add ends them.
func (p *pqWriter) addSpan(b *format.Batch, lo, hi int) error {
	if p.maxBytes > 0 {
		// Rows of strings may end a row group anywhere: row by row.
		for i := lo; i < hi; i++ {
			if err := p.add(b, i); err != nil {
				return err
			}
		}
		return nil
	}
	for lo < hi {
		j := min(hi, lo+RowGroupRows-p.n)
		size := (j - lo) * p.rowBytes
		for _, c := range p.cols {
			switch c.kind {
			case pqTime:
				c.i64 = append(c.i64, b.Time[lo:j]...)
			case pqCPU:
				c.i32 = appendInt32s(c.i32, b.CPU[lo:j])
			case pqPID:
				c.i32 = appendInt32s(c.i32, b.PID[lo:j])
			case pqTID:
				c.i32 = appendInt32s(c.i32, b.TID[lo:j])
			case pqComm:
				// Run by run of one view: a row's comm compared
				// with the last was a seventh of the export's CPU
				// on the synthesized capture.
				for i := lo; i < j; {
					e := b.CommRun(i, j)
					size += c.comm(b.Comm(i))
					c.idx = slices.Grow(c.idx, e-i-1)
					for range e - i - 1 {
						c.idx = append(c.idx, c.lastIdx)
					}
					i = e
				}
			case pqProbe:
				for _, id := range b.Probe[lo:j] {
					c.probe(id)
				}
			case pqLost:
				// Events: null.
				c.defs = append(c.defs, make([]int16, j-lo)...)
			case pqInt:
				c.ints(b.Col(c.ci), lo, j)
			default:
				fc := b.Col(c.ci)
				for i := lo; i < j; i++ {
					size += c.field(b, fc, i)
				}
			}
		}
		p.n += j - lo
		p.size += size
		if p.n >= RowGroupRows {
			if err := p.flush(); err != nil {
				return err
			}
		}
		lo = j
	}
	return nil
}

// appendInt32s appends vals to dst as Parquet's INT32 holds them (an
// unsigned value as the same bits).
func appendInt32s[T uint16 | uint32](dst []int32, vals []T) []int32 {
	for _, v := range vals {
		dst = append(dst, int32(v))
	}
	return dst
}

// ints appends rows [lo, hi) of integer field column fc as int does each,
// a null where a row has no value, with one switch on the type.
func (c *pqColumn) ints(fc *format.Column, lo, hi int) {
	ic := fc.Ints()
	switch ic.Type {
	case format.Int8:
		appendInts(c, ic.Valid, ic.I8, lo, hi)
	case format.Int16:
		appendInts(c, ic.Valid, ic.I16, lo, hi)
	case format.Int32:
		appendInts(c, ic.Valid, ic.I32, lo, hi)
	case format.Int64:
		appendInts(c, ic.Valid, ic.I64, lo, hi)
	case format.Uint8:
		appendInts(c, ic.Valid, ic.U8, lo, hi)
	case format.Uint16:
		appendInts(c, ic.Valid, ic.U16, lo, hi)
	case format.Uint32:
		appendInts(c, ic.Valid, ic.U32, lo, hi)
	default:
		appendInts(c, ic.Valid, ic.U64, lo, hi)
	}
}

// appendInts appends rows [lo, hi) of vals, each sign- or zero-extended
// then cut to the column's physical type as int does, and a null where
// bitmap valid (nil: none) says a row has no value.
func appendInts[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](c *pqColumn, valid []byte, vals []T, lo, hi int) {
	if c.phys == parquet.Types.Int32 {
		c.i32, c.defs = appendValid(c.i32, c.defs, c.nullable, valid, vals, lo, hi)
	} else {
		c.i64, c.defs = appendValid(c.i64, c.defs, c.nullable, valid, vals, lo, hi)
	}
}

// appendValid is appendInts into out and defs. It does not branch on a
// row's validity: the rows of a field's probe interleave with the other
// probes' rows, and a branch per row, mispredicted, took 7 ns a row.
func appendValid[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64, P int32 | int64](out []P, defs []int16, nullable bool, valid []byte, vals []T, lo, hi int) ([]P, []int16) {
	vals = vals[lo:hi]
	n := len(out)
	out = slices.Grow(out, len(vals))[:n+len(vals)]
	if valid == nil {
		for k, v := range vals {
			out[n+k] = P(int64(v))
		}
		if nullable {
			for range vals {
				defs = append(defs, 1)
			}
		}
		return out, defs
	}
	d := len(defs)
	defs = slices.Grow(defs, len(vals))[:d+len(vals)]
	dst := out[n:]
	m := 0
	for k, v := range vals {
		i := lo + k
		bit := int(valid[i>>3] >> (i & 7) & 1)
		defs[d+k] = int16(bit)
		dst[m] = P(int64(v)) // written, and kept if valid
		m += bit
	}
	return out[:n+m], defs
}

// limit has p write a row group once its rows take n bytes. If its buffers
// hold more than n (grown under a larger limit), it writes the rows it has
// and lets the buffers go.
func (p *pqWriter) limit(n int) error {
	p.maxBytes = n
	held := 0
	for _, c := range p.cols {
		held += c.held()
	}
	if held <= n {
		return nil
	}
	err := p.flush()
	for _, c := range p.cols {
		c.i32, c.i64, c.bytes, c.defs, c.idx = nil, nil, nil, nil, nil
	}
	return err
}

// flush writes the gathered rows as one row group.
func (p *pqWriter) flush() error {
	if p.n == 0 {
		return nil
	}
	if p.pf == nil {
		codec := p.codec
		if p.closed && p.n < smallPart {
			codec = compress.Codecs.Uncompressed
		}
		if err := p.create(codec); err != nil {
			return err
		}
	}
	n := p.n
	p.n, p.size = 0, 0
	err := p.call("write parquet", func() error { return p.pf.writeRowGroup(p.cols, n) })
	for _, c := range p.cols {
		c.reset()
	}
	return err
}

// close writes the last rows and the footer (and closes the file of a partition).
func (p *pqWriter) close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.flush()
	if p.pf == nil && err == nil {
		err = p.create(compress.Codecs.Uncompressed) // no rows
	}
	if p.pf == nil {
		// The header was never written: there is nothing to end.
	} else if cerr := p.call("write parquet footer", p.pf.close); err == nil && cerr != nil {
		err = cerr
	}
	if p.buf != nil {
		if ferr := p.buf.Flush(); err == nil {
			err = ferr
		}
	}
	if p.file != nil {
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
