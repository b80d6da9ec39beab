package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/bpftape/bpftape/format"
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
// utf8, as pqarrow in Arrow Go v15 has no string_view, and probe stays a
// dictionary of utf8. A stack field is a utf8 column of folded frames,
// null for no stack, or with Options.StackIDs a uint64 column of ids.
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
			// pqarrow closes a sink that is an io.Closer: give it a buffer.
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

// pqWriter gathers rows in Arrow builders and writes them as Parquet row groups.
type pqWriter struct {
	fw     *pqarrow.FileWriter
	schema *arrow.Schema
	apps   []func(b *format.Batch, i int)
	blds   []array.Builder
	probe  int // index of the probe column, or -1
	dict   arrow.Array
	dtype  *arrow.DictionaryType
	n      int
	file   io.Closer     // of a partition, closed after the footer
	buf    *bufio.Writer // in front of file
	closed bool
	sink   *sink // the output, with its first write error
	failed error // set once pqarrow failed: it is not called again
}

// sink remembers the first error of the output that pqarrow writes to.
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

// call runs a pqarrow call that writes. After a write error (a full disk)
// Arrow Go v15's column writers dereference released page buffers on the
// next write or at Close (a segfault): its panic is taken back here, every
// later call is skipped, and the output's own error is the one returned.
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
	mem := memory.DefaultAllocator
	p := &pqWriter{probe: -1}
	p.dtype = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}
	probes := c.Meta().ProbeNames()
	db := array.NewStringBuilder(mem)
	db.AppendValues(probes, nil)
	p.dict = db.NewArray()
	db.Release()
	var fields []arrow.Field
	for k, col := range cols {
		var f arrow.Field
		switch col.fixed {
		case format.ColTime:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Int64}
			bl := array.NewInt64Builder(mem)
			p.apps = append(p.apps, func(b *format.Batch, i int) { bl.Append(b.Time[i]) })
			p.blds = append(p.blds, bl)
		case format.ColCPU:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint16}
			bl := array.NewUint16Builder(mem)
			p.apps = append(p.apps, func(b *format.Batch, i int) { bl.Append(b.CPU[i]) })
			p.blds = append(p.blds, bl)
		case format.ColPID, format.ColTID:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint32}
			bl := array.NewUint32Builder(mem)
			if col.fixed == format.ColPID {
				p.apps = append(p.apps, func(b *format.Batch, i int) { bl.Append(b.PID[i]) })
			} else {
				p.apps = append(p.apps, func(b *format.Batch, i int) { bl.Append(b.TID[i]) })
			}
			p.blds = append(p.blds, bl)
		case format.ColComm:
			f = arrow.Field{Name: col.name, Type: arrow.BinaryTypes.String}
			bl := array.NewStringBuilder(mem)
			p.apps = append(p.apps, func(b *format.Batch, i int) { bl.Append(strings.ToValidUTF8(b.Comm(i), "\uFFFD")) })
			p.blds = append(p.blds, bl)
		case format.ColProbe:
			f = arrow.Field{Name: col.name, Type: p.dtype}
			bl := array.NewUint16Builder(mem)
			p.apps = append(p.apps, func(b *format.Batch, i int) { bl.Append(b.Probe[i]) })
			p.blds = append(p.blds, bl)
			p.probe = k
		case format.ColLost:
			f = arrow.Field{Name: col.name, Type: arrow.PrimitiveTypes.Uint64, Nullable: true}
			bl := array.NewUint64Builder(mem)
			p.apps = append(p.apps, func(b *format.Batch, i int) {
				if n, ok := b.Lost(i); ok {
					bl.Append(n)
				} else {
					bl.AppendNull()
				}
			})
			p.blds = append(p.blds, bl)
		default:
			if col.names != nil {
				f = arrow.Field{Name: col.name, Type: arrow.BinaryTypes.String, Nullable: true}
				bl := array.NewStringBuilder(mem)
				p.apps = append(p.apps, stackAppender(bl, col))
				p.blds = append(p.blds, bl)
				break
			}
			f = arrow.Field{Name: col.name, Type: arrowType(col.typ), Nullable: true}
			bl := array.NewBuilder(mem, f.Type)
			p.apps = append(p.apps, fieldAppender(bl, col.index, col.typ))
			p.blds = append(p.blds, bl)
		}
		fields = append(fields, f)
	}
	smd := arrow.NewMetadata([]string{format.MetadataKey}, []string{string(js)})
	p.schema = arrow.NewSchema(fields, &smd)
	props := parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(RowGroupRows),
		parquet.WithCreatedBy("bpftape"),
	)
	var err error
	p.sink = &sink{w: w}
	p.fw, err = pqarrow.NewFileWriter(p.schema, p.sink, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		p.release()
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	return p, nil
}

// fieldAppender appends a field column's value, or null, to bl.
func fieldAppender(bl array.Builder, ci int, t format.Type) func(b *format.Batch, i int) {
	return func(b *format.Batch, i int) {
		c := b.Col(ci)
		if !c.Valid(i) {
			bl.AppendNull()
			return
		}
		switch bl := bl.(type) {
		case *array.Int8Builder:
			bl.Append(int8(c.Int(i)))
		case *array.Int16Builder:
			bl.Append(int16(c.Int(i)))
		case *array.Int32Builder:
			bl.Append(int32(c.Int(i)))
		case *array.Int64Builder:
			bl.Append(c.Int(i))
		case *array.Uint8Builder:
			bl.Append(uint8(c.Int(i)))
		case *array.Uint16Builder:
			bl.Append(uint16(c.Int(i)))
		case *array.Uint32Builder:
			bl.Append(uint32(c.Int(i)))
		case *array.Uint64Builder:
			bl.Append(uint64(c.Int(i)))
		case *array.StringBuilder:
			bl.Append(strings.ToValidUTF8(c.Str(i), "\uFFFD")) // Parquet utf8 must be UTF-8
		}
	}
}

// stackAppender appends a stack field's folded frames (valid UTF-8:
// textsafe escapes every other byte), or null, to bl.
func stackAppender(bl *array.StringBuilder, col column) func(b *format.Batch, i int) {
	return func(b *format.Batch, i int) {
		if !b.Col(col.index).Valid(i) {
			bl.AppendNull()
			return
		}
		if s, ok := col.folded(b, i); ok {
			bl.Append(s)
		} else {
			bl.AppendNull()
		}
	}
}

func (p *pqWriter) add(b *format.Batch, i int) error {
	for _, app := range p.apps {
		app(b, i)
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
	arrs := make([]arrow.Array, len(p.blds))
	for k, bl := range p.blds {
		arrs[k] = bl.NewArray()
	}
	if p.probe >= 0 {
		idx := arrs[p.probe]
		arrs[p.probe] = array.NewDictionaryArray(p.dtype, idx, p.dict)
		idx.Release()
	}
	rec := array.NewRecord(p.schema, arrs, int64(p.n))
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	p.n = 0
	return p.call("write parquet", func() error { return p.fw.Write(rec) })
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
	p.release()
	return err
}

func (p *pqWriter) release() {
	for _, bl := range p.blds {
		bl.Release()
	}
	p.dict.Release()
}
