package arrowipc

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	flatbuffers "github.com/google/flatbuffers/go"
)

// SchemaStream returns schema as an Arrow IPC stream without batches: its
// Schema message and the end-of-stream marker. Arrow's Parquet writers
// store it, base64, under the file's ARROW:schema key, from which Arrow
// readers take each column's Arrow type (a dictionary, an unsigned width)
// back. Its fields may be integers, utf8, string and binary views, and
// dictionaries of utf8 (any integer index).
func SchemaStream(schema *arrow.Schema) ([]byte, error) {
	for i, f := range schema.Fields() {
		dt := f.Type
		if d, ok := dt.(*arrow.DictionaryType); ok {
			if d.ValueType.ID() != arrow.STRING || !isInt(d.IndexType) {
				return nil, fmt.Errorf("arrowipc: column %d (%s): unsupported type %v", i, f.Name, f.Type)
			}
			continue
		}
		switch {
		case isInt(dt), dt.ID() == arrow.STRING, dt.ID() == arrow.STRING_VIEW, dt.ID() == arrow.BINARY_VIEW:
		default:
			return nil, fmt.Errorf("arrowipc: column %d (%s): unsupported type %v", i, f.Name, f.Type)
		}
	}
	var buf bytes.Buffer
	w := &Writer{w: &buf, schema: schema, fb: flatbuffers.NewBuilder(1024)}
	w.writeMessage(msgSchema, w.buildSchema())
	w.write(eos[:])
	if w.err != nil {
		return nil, w.err
	}
	return buf.Bytes(), nil
}

func isInt(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}
