package arrowipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
)

// readBatches reads every batch of f with a Decoder, every column, and
// compares it with the models (the writer's input; writer_test checks the
// same files with Arrow Go's reader).
func readBatches(f *File, reuse bool, batches []*testBatch) error {
	d := f.NewDecoder(reuse)
	defer d.Close()
	if f.NumDictionaries() != 1 {
		return fmt.Errorf("%d dictionaries", f.NumDictionaries())
	}
	dict, err := d.Dictionary(0)
	if err != nil {
		return err
	}
	if dict.Len() != len(testDict) {
		return fmt.Errorf("dictionary of %d values", dict.Len())
	}
	for i, s := range testDict {
		if dict.Value(i) != s {
			return fmt.Errorf("dictionary value %d: %q, want %q", i, dict.Value(i), s)
		}
	}
	if f.NumBatches() != len(batches) {
		return fmt.Errorf("%d batches, want %d", f.NumBatches(), len(batches))
	}
	for bi, b := range batches {
		if err := d.Read(bi); err != nil {
			return fmt.Errorf("batch %d: %w", bi, err)
		}
		if d.Rows() != b.rows {
			return fmt.Errorf("batch %d: %d rows, want %d", bi, d.Rows(), b.rows)
		}
		for ci, fd := range f.Schema.Fields() {
			m := &b.cols[ci]
			if d.NullCount(ci) != b.data[ci].NullCount {
				return fmt.Errorf("batch %d column %s: %d nulls, want %d", bi, fd.Name, d.NullCount(ci), b.data[ci].NullCount)
			}
			valid, err := d.Validity(ci)
			if err != nil {
				return err
			}
			var vals []byte
			var views Views
			if isView(fd.Type) {
				views, err = d.Views(ci)
			} else {
				vals, err = d.Values(ci, width(fd.Type))
			}
			if err != nil {
				return err
			}
			for i := 0; i < b.rows; i++ {
				ok := valid == nil || valid[i>>3]&(1<<(i&7)) != 0
				if ok != m.isValid(i) {
					return fmt.Errorf("batch %d column %s row %d: valid %v", bi, fd.Name, i, ok)
				}
				if !ok {
					continue
				}
				if isView(fd.Type) {
					if views.Value(i) != m.strs[i] || string(views.Bytes(i)) != m.strs[i] {
						return fmt.Errorf("batch %d column %s row %d: %q, want %q", bi, fd.Name, i, views.Value(i), m.strs[i])
					}
					continue
				}
				var buf [8]byte
				w := width(fd.Type)
				copy(buf[:], vals[i*w:i*w+w])
				if v := binary.LittleEndian.Uint64(buf[:]); v != m.ints[i] {
					return fmt.Errorf("batch %d column %s row %d: %d, want %d", bi, fd.Name, i, v, m.ints[i])
				}
			}
		}
	}
	return nil
}

// TestReadRoundTrip reads what the writer writes, in every codec, through
// the footer and, without it, as a stream cut after each batch.
func TestReadRoundTrip(t *testing.T) {
	batches := testBatches(5)
	schema := testSchema()
	for _, codec := range codecs {
		file, ends := writeFile(t, schema, batches, codec)
		f, err := Open(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if f.Streamed() || !f.Schema.Equal(schema) || !f.Schema.Metadata().Equal(schema.Metadata()) {
			t.Fatalf("%v: streamed %v, schema %v", codec, f.Streamed(), f.Schema)
		}
		for _, reuse := range []bool{false, true} {
			if err := readBatches(f, reuse, batches); err != nil {
				t.Fatalf("%v (reuse %v): %v", codec, reuse, err)
			}
		}
		for k, end := range ends {
			for _, cut := range []int64{end, end + 5} {
				cut = min(cut, int64(len(file)))
				f, err := Open(bytes.NewReader(file[:cut]), cut)
				if err != nil {
					t.Fatalf("%v cut at %d: %v", codec, cut, err)
				}
				if !f.Streamed() || f.StreamErr() != nil || f.StreamEnd() != end {
					t.Fatalf("%v cut at %d: streamed %v, stopped by %v, end %d, want %d", codec, cut, f.Streamed(), f.StreamErr(), f.StreamEnd(), end)
				}
				if err := readBatches(f, true, batches[:k+1]); err != nil {
					t.Fatalf("%v cut at %d: %v", codec, cut, err)
				}
			}
		}
	}
}

// TestOpenRefuses: a file that is not Arrow IPC, or a stream that is not
// in order, is refused or stops where it goes wrong.
func TestOpenRefuses(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("ARROW1\x00\x00"), []byte("not arrow at all")} {
		if _, err := Open(bytes.NewReader(data), int64(len(data))); !errors.Is(err, ErrNotArrow) {
			t.Errorf("%q: %v, want ErrNotArrow", data, err)
		}
	}
	file, ends := writeFile(t, testSchema(), testBatches(6)[:3], Zstd)
	stream := file[:ends[2]]
	// The dictionary batch (after the schema) dropped: the stream stops at
	// the first record batch.
	f0, _ := Open(bytes.NewReader(stream), int64(len(stream)))
	schemaEnd := f0.dict(0).offset
	dictEnd := schemaEnd + int64(f0.dict(0).meta) + f0.dict(0).body
	swapped := append(bytes.Clone(stream[:schemaEnd]), stream[dictEnd:]...)
	f, err := Open(bytes.NewReader(swapped), int64(len(swapped)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumBatches() != 0 || !errors.Is(f.StreamErr(), ErrCorrupt) {
		t.Errorf("stream without its dictionary: %d batches, %v", f.NumBatches(), f.StreamErr())
	}
}

// FuzzDecode opens arbitrary bytes as an IPC file and decodes every
// column of every batch, with and without reuse: no panic, and no more
// allocated than one batch may take (see limits.go).
func FuzzDecode(f *testing.F) {
	schema := testSchema()
	for _, codec := range codecs {
		file, ends := writeFile(f, schema, testBatches(7)[:6], codec)
		f.Add(file)
		f.Add(file[:ends[3]+10])
	}
	const bound = 2*(MaxMessageMeta+2*MaxBatchBytes+MaxZstdWindow) + 64<<20
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		decodeAll(data)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
			t.Fatalf("decoding %d bytes allocated %s", len(data), SizeString(alloc))
		}
	})
}

// decodeAll decodes everything a file holds, touching every string.
func decodeAll(data []byte) error {
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, reuse := range []bool{false, true} {
		d := f.NewDecoder(reuse)
		for k := 0; k < f.NumDictionaries(); k++ {
			if s, err := d.Dictionary(k); err == nil {
				for i := 0; i < s.Len(); i++ {
					_ = s.Value(i)
				}
			}
		}
		for i := 0; i < f.NumBatches(); i++ {
			if d.Read(i) != nil {
				break
			}
			for ci, fd := range f.Schema.Fields() {
				d.Validity(ci)
				switch dt := fd.Type.(type) {
				case arrow.FixedWidthDataType:
					d.Values(ci, dt.BitWidth()/8)
				case *arrow.DictionaryType:
					d.Values(ci, dt.IndexType.(arrow.FixedWidthDataType).BitWidth()/8)
				default:
					if v, err := d.Views(ci); err == nil {
						for r := 0; r < v.Len(); r++ {
							_ = v.Value(r)
						}
					}
				}
			}
		}
		d.Close()
	}
	return nil
}
