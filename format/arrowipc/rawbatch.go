package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Block is where a record batch message lies in the stream a Writer
// wrote: Offset bytes from the start of the file, Meta bytes of prefix,
// flatbuffer and padding, then Body bytes of body. The message is
// self-contained (its buffers are placed relative to its body), so its
// bytes can go into another file of the same schema as they are
// (WriteRawBatch).
type Block struct {
	Offset int64
	Meta   int32
	Body   int64
}

// LastBatch returns where the record batch written last lies; the zero
// Block before the first.
func (w *Writer) LastBatch() Block {
	if len(w.recs) == 0 {
		return Block{}
	}
	b := w.recs[len(w.recs)-1]
	return Block{Offset: b.offset, Meta: b.meta, Body: b.body}
}

// ForgetBatches leaves the record batches written so far out of the
// footer, for a writer whose stream is cut into messages as it goes
// rather than kept as a file (a flight recorder's ring): its footer would
// otherwise grow by one block per batch for as long as it writes.
func (w *Writer) ForgetBatches() { w.recs = w.recs[:0] }

// WriteRawBatch appends a record batch message as another Writer of the
// same schema, dictionary and codec wrote it: msg is its bytes, from the
// continuation marker to the end of its body, and meta the length of its
// part before the body (LastBatch's Meta). Only the framing is checked:
// the message is one this package wrote.
func (w *Writer) WriteRawBatch(msg []byte, meta int32) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("arrowipc: write to closed writer")
	}
	if meta < 8 || int64(meta) > int64(len(msg)) || meta%8 != 0 ||
		binary.LittleEndian.Uint32(msg) != 0xffffffff || int64(binary.LittleEndian.Uint32(msg[4:]))+8 != int64(meta) {
		return fmt.Errorf("arrowipc: raw batch: not a message of %d header bytes", meta)
	}
	w.recs = append(w.recs, block{offset: w.pos, meta: meta, body: int64(len(msg)) - int64(meta)})
	w.write(msg)
	return w.err
}
