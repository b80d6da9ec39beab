package arrowipc

import (
	"bytes"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
)

// TestSchemaStream reads SchemaStream's bytes with Arrow Go's stream
// reader, as pqarrow reads ARROW:schema, and checks that the schema comes
// back whole: field names, types (a dictionary of utf8 with uint16
// indices, utf8, unsigned widths), nullability and metadata.
func TestSchemaStream(t *testing.T) {
	md := arrow.NewMetadata([]string{"bpftape"}, []string{`{"v":2}`})
	want := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cpu", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "comm", Type: arrow.BinaryTypes.String},
		{Name: "probe", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}},
		{Name: "lost", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "a.v", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "a.s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
	b, err := SchemaStream(want)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if got := r.Schema(); !got.Equal(want) || !got.Metadata().Equal(want.Metadata()) {
		t.Errorf("read back\n%v\nwant\n%v", got, want)
	}
	if r.Next() {
		t.Error("a record batch in a schema-only stream")
	}
	if err := r.Err(); err != nil {
		t.Errorf("end of stream: %v", err)
	}

	bad := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil)
	if _, err := SchemaStream(bad); err == nil {
		t.Error("a float64 field was accepted")
	}
}
