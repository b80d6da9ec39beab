package arrowipc

// The flatbuffer tables of the Arrow format (format/Schema.fbs,
// Message.fbs, File.fbs), written by hand: each table's slots are its
// fields in declaration order, and a field equal to its default is left out.

import (
	"github.com/apache/arrow/go/v15/arrow"
	flatbuffers "github.com/google/flatbuffers/go"
)

// MetadataVersion.V5, MessageHeader and Type union tags.
const (
	metadataV5 = 4

	msgSchema          = 1
	msgDictionaryBatch = 2
	msgRecordBatch     = 3

	typeInt        = 2
	typeUtf8       = 5
	typeBinaryView = 23
	typeUtf8View   = 24
)

// buildSchema builds the Schema table:
// endianness:short (0 little), fields:[Field], custom_metadata:[KeyValue], features:[long].
func (w *Writer) buildSchema() flatbuffers.UOffsetT {
	fb := w.fb
	fields := w.schema.Fields()
	offs := make([]flatbuffers.UOffsetT, len(fields))
	for i, f := range fields {
		offs[i] = w.buildField(f)
	}
	fieldVec := tableVector(fb, offs)
	md := w.schema.Metadata()
	meta := buildMetadata(fb, &md)
	fb.StartObject(4)
	fb.PrependInt16Slot(0, 0, 0)
	fb.PrependUOffsetTSlot(1, fieldVec, 0)
	fb.PrependUOffsetTSlot(2, meta, 0)
	return fb.EndObject()
}

// buildField builds a Field table: name:string, nullable:bool,
// type_type:ubyte, type:union, dictionary:DictionaryEncoding,
// children:[Field], custom_metadata:[KeyValue].
func (w *Writer) buildField(f arrow.Field) flatbuffers.UOffsetT {
	fb := w.fb
	name := fb.CreateString(f.Name)
	dt := f.Type
	var dict flatbuffers.UOffsetT
	if d, ok := dt.(*arrow.DictionaryType); ok {
		idx := buildInt(fb, d.IndexType)
		// DictionaryEncoding: id:long, indexType:Int, isOrdered:bool,
		// dictionaryKind:short (0 DenseArray).
		fb.StartObject(4)
		fb.PrependInt64Slot(0, 0, 0)
		fb.PrependUOffsetTSlot(1, idx, 0)
		fb.PrependBoolSlot(2, d.Ordered, false)
		dict = fb.EndObject()
		dt = d.ValueType
	}
	var tag byte
	var typ flatbuffers.UOffsetT
	switch dt.ID() {
	case arrow.STRING:
		tag = typeUtf8
		fb.StartObject(0)
		typ = fb.EndObject()
	case arrow.STRING_VIEW:
		tag = typeUtf8View
		fb.StartObject(0)
		typ = fb.EndObject()
	case arrow.BINARY_VIEW:
		tag = typeBinaryView
		fb.StartObject(0)
		typ = fb.EndObject()
	default: // an integer: NewWriter checked
		tag = typeInt
		typ = buildInt(fb, dt)
	}
	// Arrow C++ rejects a Field without a children vector, even an empty one.
	fb.StartVector(4, 0, 4)
	children := fb.EndVector(0)
	meta := buildMetadata(fb, &f.Metadata)
	fb.StartObject(7)
	fb.PrependUOffsetTSlot(0, name, 0)
	fb.PrependBoolSlot(1, f.Nullable, false)
	fb.PrependByteSlot(2, tag, 0)
	fb.PrependUOffsetTSlot(3, typ, 0)
	fb.PrependUOffsetTSlot(4, dict, 0)
	fb.PrependUOffsetTSlot(5, children, 0)
	fb.PrependUOffsetTSlot(6, meta, 0)
	return fb.EndObject()
}

// buildInt builds an Int table: bitWidth:int, is_signed:bool.
func buildInt(fb *flatbuffers.Builder, dt arrow.DataType) flatbuffers.UOffsetT {
	signed := false
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		signed = true
	}
	fb.StartObject(2)
	fb.PrependInt32Slot(0, int32(dt.(arrow.FixedWidthDataType).BitWidth()), 0)
	fb.PrependBoolSlot(1, signed, false)
	return fb.EndObject()
}

// buildMetadata builds a [KeyValue] vector (KeyValue: key:string,
// value:string), or returns 0 for no metadata.
func buildMetadata(fb *flatbuffers.Builder, md *arrow.Metadata) flatbuffers.UOffsetT {
	if md.Len() == 0 {
		return 0
	}
	offs := make([]flatbuffers.UOffsetT, md.Len())
	for i, k := range md.Keys() {
		ko := fb.CreateString(k)
		vo := fb.CreateString(md.Values()[i])
		fb.StartObject(2)
		fb.PrependUOffsetTSlot(0, ko, 0)
		fb.PrependUOffsetTSlot(1, vo, 0)
		offs[i] = fb.EndObject()
	}
	return tableVector(fb, offs)
}

func tableVector(fb *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	fb.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		fb.PrependUOffsetT(offs[i])
	}
	return fb.EndVector(len(offs))
}

// buildRecordBatch builds a RecordBatch table from w.nodes, w.bufs and
// w.variadic: length:long, nodes:[FieldNode], buffers:[Buffer],
// compression:BodyCompression, variadicBufferCounts:[long].
func (w *Writer) buildRecordBatch(rows int64) flatbuffers.UOffsetT {
	fb := w.fb
	// struct FieldNode { length:long; null_count:long }
	fb.StartVector(16, len(w.nodes), 8)
	for i := len(w.nodes) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PrependInt64(w.nodes[i].nulls)
		fb.PrependInt64(w.nodes[i].length)
	}
	nodes := fb.EndVector(len(w.nodes))
	// struct Buffer { offset:long; length:long }
	fb.StartVector(16, len(w.bufs), 8)
	for i := len(w.bufs) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PrependInt64(w.bufs[i].length)
		fb.PrependInt64(w.bufs[i].offset)
	}
	bufs := fb.EndVector(len(w.bufs))
	var comp, variadic flatbuffers.UOffsetT
	if w.codec != None {
		// BodyCompression: codec:byte (0 LZ4_FRAME, 1 ZSTD), method:byte (0 BUFFER).
		codec := int8(0)
		if w.codec == Zstd {
			codec = 1
		}
		fb.StartObject(2)
		fb.PrependInt8Slot(0, codec, 0)
		fb.PrependInt8Slot(1, 0, 0)
		comp = fb.EndObject()
	}
	if len(w.variadic) > 0 {
		fb.StartVector(8, len(w.variadic), 8)
		for i := len(w.variadic) - 1; i >= 0; i-- {
			fb.PrependInt64(w.variadic[i])
		}
		variadic = fb.EndVector(len(w.variadic))
	}
	fb.StartObject(5)
	fb.PrependInt64Slot(0, rows, 0)
	fb.PrependUOffsetTSlot(1, nodes, 0)
	fb.PrependUOffsetTSlot(2, bufs, 0)
	fb.PrependUOffsetTSlot(3, comp, 0)
	fb.PrependUOffsetTSlot(4, variadic, 0)
	return fb.EndObject()
}

// buildBlocks builds a [Block] vector for the footer:
// struct Block { offset:long; metaDataLength:int; (pad 4) bodyLength:long }.
func (w *Writer) buildBlocks(blocks []block) flatbuffers.UOffsetT {
	fb := w.fb
	fb.StartVector(24, len(blocks), 8)
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		fb.Prep(8, 24)
		fb.PrependInt64(b.body)
		fb.Pad(4)
		fb.PrependInt32(b.meta)
		fb.PrependInt64(b.offset)
	}
	return fb.EndVector(len(blocks))
}
