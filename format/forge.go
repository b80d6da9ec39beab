package format

// AddForgedStackPart makes the next batch carry part, taken as it is, as
// its stack table part (the StackTableKey metadata value: JSON, zstd,
// base64), in place of the entries AddStacks gathered for it. It is not
// part of the capture API: it lets tests forge captures that a Writer
// never writes (a part of a million empty mappings, say), to check that
// readers refuse them within their limits.
func (w *Writer) AddForgedStackPart(part string) { w.forged = part }
