package export

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

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
// Options.StackIDs a uint64 column of ids.
func WriteParquet(c *replay.Capture, w io.Writer, o Options) (*Result, *replay.Pass, error) {
	o.Lost = o.lostMode()
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
	pass, err := walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		count(res, lost)
		return pw.add(b, i)
	})
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
// into dir adds to it.
func WritePartitioned(c *replay.Capture, dir string, o Options) (res *Result, pass *replay.Pass, err error) {
	o.Lost = o.lostMode()
	m := c.Meta()
	all := columns(c, &o)
	names, err := nameStacks(c, &o, all)
	if err != nil {
		return nil, nil, err
	}
	type part struct {
		pw   *pqWriter
		f    *outfile.File
		key  [2]string
		used uint64 // when it last got a row
	}
	// At most MaxOpenParts writers are open at once (each holds a row
	// group's builders): a capture may name thousands of hosts. The least
	// recently used is finished first, and its partition's later rows go
	// into a new part file.
	open := map[[2]string]*part{}
	var order []*part // every part, open or finished, to commit
	var rows uint64
	res = &Result{}
	defer func() {
		stackNotes(res, names)
		// Every part is finished, then put in place only if all are.
		for _, p := range order {
			if cerr := p.pw.close(); err == nil && cerr != nil {
				err = fmt.Errorf("%s: %w", dir, cerr)
			}
		}
		for _, p := range order {
			if err == nil {
				if err = p.f.Commit(); err == nil {
					res.Files = append(res.Files, p.f.Name())
				}
			}
		}
		if err != nil {
			for _, p := range order {
				p.f.Discard()
			}
			for _, path := range res.Files {
				os.Remove(path) // parts this export committed
			}
			res.Files = nil
		}
	}()
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
	pass, err = walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		pi := b.Probe[i]
		host := m.Host
		switch {
		case o.Redact:
			host = "" // the folder host=__HIVE_DEFAULT_PARTITION__: NULL
		case hostCol[pi] >= 0 && b.Col(hostCol[pi]).Valid(i):
			host = b.Col(hostCol[pi]).Str(i)
		case merged:
			host = HiveNull
		}
		key := [2]string{host, m.Probes[pi].Name}
		p := open[key]
		if p == nil {
			if len(open) >= MaxOpenParts {
				var lru *part
				for _, q := range open {
					if lru == nil || q.used < lru.used {
						lru = q
					}
				}
				if err := lru.pw.close(); err != nil {
					return fmt.Errorf("%s: %w", dir, err)
				}
				delete(open, lru.key)
			}
			f, err := createPart(dir, host, key[1])
			if err != nil {
				return err
			}
			// The column writers write in small pieces: give them a buffer.
			bw := bufio.NewWriterSize(f, 1<<16)
			pw, err := newPQWriter(bw, probeCols[pi], c, &o)
			if err != nil {
				f.Discard()
				return fmt.Errorf("%s: %w", dir, err)
			}
			pw.buf = bw
			p = &part{pw: pw, f: f, key: key}
			open[key] = p
			order = append(order, p)
			res.OpenParts = max(res.OpenParts, len(open))
		}
		rows++
		p.used = rows
		count(res, lost)
		return p.pw.add(b, i)
	})
	return res, pass, err
}

// MaxOpenParts bounds the part files a partitioned export writes at once.
const MaxOpenParts = 64

// createPart starts a new part file in dir/host=H/probe=P/: a temporary
// file that commitParts names part-N.parquet with the first free N, mode
// 0600, replacing no file.
func createPart(dir, host, probe string) (*outfile.File, error) {
	folder := filepath.Join(dir, "host="+hiveEscape(host), "probe="+hiveEscape(probe))
	if err := outfile.MkdirAll(dir, folder); err != nil {
		return nil, err
	}
	return outfile.CreateNumbered(folder, func(n int) string { return fmt.Sprintf("part-%d.parquet", n) })
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
// groups with parquet/file's column writers. Not pqarrow: it imports
// Arrow's compute and flight packages, and through them gRPC and
// protobuf, whose package inits every bpftape command paid at start
// (bpftape --version 39.5 ms against 25.2 without them, binary 50 MB
// against 24 MB). The Arrow schema pqarrow stores under ARROW:schema is
// written here too (arrowipc.SchemaStream), so that Arrow readers (polars,
// pyarrow) see the same types: probe a dictionary, comm utf8.
type pqWriter struct {
	fw     *file.Writer
	cols   []*pqColumn
	n      int
	file   io.Closer     // of a partition, closed after the footer
	buf    *bufio.Writer // in front of file
	closed bool
	sink   *sink // the output, with its first write error
	failed error // set once the Parquet writer failed: it is not called again
}

// pqColumn is one column's values for the current row group: ints (INT32
// or INT64 by physical type) or byte arrays (bytes, slices of arena), and
// for a nullable column its definition levels (1 set, 0 null).
type pqColumn struct {
	phys     parquet.Type
	nullable bool
	i32      []int32
	i64      []int64
	bytes    []parquet.ByteArray
	arena    []byte
	defs     []int16
	add      func(b *format.Batch, i int)
}

func (c *pqColumn) null() { c.defs = append(c.defs, 0) }

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

// str appends s, made valid UTF-8 (Parquet utf8 must be).
func (c *pqColumn) str(s string) {
	c.set()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	start := len(c.arena)
	c.arena = append(c.arena, s...)
	// Earlier values keep the arena they were cut from when it grows.
	c.bytes = append(c.bytes, c.arena[start:len(c.arena):len(c.arena)])
}

func (c *pqColumn) reset() {
	c.i32, c.i64, c.bytes, c.defs = c.i32[:0], c.i64[:0], c.bytes[:0], c.defs[:0]
	c.arena = nil // the written values may still point into it
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
// disk) Arrow Go v15's column writers dereference released page buffers on
// the next write or at Close (a segfault): its panic is taken back here,
// every later call is skipped, and the output's own error is the one
// returned.
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
	var fields []arrow.Field
	for _, col := range cols {
		var f arrow.Field
		pc := &pqColumn{}
		switch col.fixed {
		case format.ColTime:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Int64}
			pc.add = func(b *format.Batch, i int) { pc.int(uint64(b.Time[i])) }
		case format.ColCPU:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint16}
			pc.add = func(b *format.Batch, i int) { pc.int(uint64(b.CPU[i])) }
		case format.ColPID:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint32}
			pc.add = func(b *format.Batch, i int) { pc.int(uint64(b.PID[i])) }
		case format.ColTID:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint32}
			pc.add = func(b *format.Batch, i int) { pc.int(uint64(b.TID[i])) }
		case format.ColComm:
			f = arrow.Field{Name: col.name, Type: arrow.BinaryTypes.String}
			pc.add = func(b *format.Batch, i int) { pc.str(b.Comm(i)) }
		case format.ColProbe:
			// The dictionary's values written out: the column writer
			// dictionary-encodes them again.
			f = arrow.Field{Name: col.name, Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}}
			pc.add = func(b *format.Batch, i int) {
				k := int(b.Probe[i])
				if k < len(probes) {
					pc.str(probes[k])
				} else {
					pc.str("")
				}
			}
		case format.ColLost:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint64, Nullable: true}
			pc.add = func(b *format.Batch, i int) {
				if n, ok := b.Lost(i); ok {
					pc.int(n)
				} else {
					pc.null()
				}
			}
		default:
			if col.names != nil {
				f = arrow.Field{Name: col.name, Type: arrow.BinaryTypes.String, Nullable: true}
				pc.add = stackAppender(pc, col)
				break
			}
			f = arrow.Field{Name: col.name, Type: arrowType(col.typ), Nullable: true}
			pc.add = fieldAppender(pc, col.index, f.Type.ID() == arrow.STRING)
		}
		pc.nullable = f.Nullable
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
		p.cols[k].phys = n.PhysicalType()
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
	props := parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(RowGroupRows),
		parquet.WithCreatedBy("bpftape"),
	)
	p.sink = &sink{w: w}
	err = p.call("write parquet header", func() error {
		p.fw = file.NewParquetWriter(p.sink, root, file.WithWriterProps(props), file.WithWriteMetadata(kv))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// fieldAppender appends a field column's value, or null, to pc.
func fieldAppender(pc *pqColumn, ci int, isString bool) func(b *format.Batch, i int) {
	return func(b *format.Batch, i int) {
		c := b.Col(ci)
		switch {
		case !c.Valid(i):
			pc.null()
		case isString:
			pc.str(c.Str(i))
		default:
			pc.int(uint64(c.Int(i)))
		}
	}
}

// stackAppender appends a stack field's folded frames (valid UTF-8:
// textsafe escapes every other byte), or null, to pc.
func stackAppender(pc *pqColumn, col column) func(b *format.Batch, i int) {
	return func(b *format.Batch, i int) {
		if !b.Col(col.index).Valid(i) {
			pc.null()
			return
		}
		if s, ok := col.folded(b, i); ok {
			pc.str(s)
		} else {
			pc.null()
		}
	}
}

func (p *pqWriter) add(b *format.Batch, i int) error {
	for _, c := range p.cols {
		c.add(b, i)
	}
	p.n++
	if p.n >= RowGroupRows {
		return p.flush()
	}
	return nil
}

// flush writes the gathered rows as one row group.
func (p *pqWriter) flush() error {
	if p.n == 0 {
		return nil
	}
	p.n = 0
	err := p.call("write parquet", func() error {
		rg := p.fw.AppendRowGroup()
		for _, c := range p.cols {
			cw, err := rg.NextColumn()
			if err != nil {
				return err
			}
			var defs []int16
			if c.nullable {
				defs = c.defs
			}
			switch w := cw.(type) {
			case *file.Int32ColumnChunkWriter:
				_, err = w.WriteBatch(c.i32, defs, nil)
			case *file.Int64ColumnChunkWriter:
				_, err = w.WriteBatch(c.i64, defs, nil)
			case *file.ByteArrayColumnChunkWriter:
				_, err = w.WriteBatch(c.bytes, defs, nil)
			default:
				err = fmt.Errorf("column %s: writer %T", cw.Descr().Name(), cw)
			}
			if err != nil {
				return err
			}
			if err := cw.Close(); err != nil {
				return err
			}
		}
		return rg.Close()
	})
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
	if cerr := p.call("write parquet footer", p.fw.Close); err == nil && cerr != nil {
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
