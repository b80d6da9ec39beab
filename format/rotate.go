package format

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// Switch finishes the current file — its queued batches, the footer (with
// the metadata as Meta() holds it now), and a sync and close of the file
// Create opened or out was — then lets next, if not nil, change the
// metadata (a recorder rotating its output gives each file its own start
// times), and continues the capture in out, a new file with the same
// schema and that metadata. Stats keep counting, except Bytes, which
// restarts with the new file. A recorder rotates its output so; like
// Append, it is called by the appending goroutine.
func (w *Writer) Switch(out io.Writer, next func(*Meta)) (err error) {
	if w.closed {
		return errors.New("capture writer is closed")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// Stop the encoder once the queue is written; it runs again afterwards,
	// for the new file or for Close.
	close(w.work)
	<-w.done
	defer func() {
		if err != nil {
			w.setErr(err)
		}
		w.work = make(chan *batch, 1)
		w.done = make(chan struct{})
		go w.encoder()
	}()
	if err := w.Err(); err != nil {
		return err
	}
	if err := w.finishFile(); err != nil {
		return err
	}
	if next != nil {
		next(w.meta)
	}
	// The new file's tally starts with its first batch (Meta.Counts).
	w.meta.Counts = nil
	if n := w.rowsWritten.Load(); n > 0 {
		w.prevPerRow = float64(w.rowBytes.Load()) / float64(n)
	}
	w.handed = 0
	w.rowsWritten.Store(0)
	w.rowBytes.Store(0)
	w.counts.reset(w.meta.Probes)
	w.file = nil
	if c, ok := out.(io.Closer); ok {
		w.file = c
	}
	w.out = newPosWriter(out)
	// Each file is a capture of its own: its first batch needs the whole
	// stack table.
	w.sent = stackLengths{}
	js, err := w.meta.encode()
	if err != nil {
		return err
	}
	md := arrow.NewMetadata([]string{MetadataKey}, []string{js})
	w.schema = arrow.NewSchema(w.schema.Fields(), &md)
	codec, copts := ipcCodec(w.opts.Compression)
	if w.aw, err = arrowipc.NewWriter(w.out, w.schema, w.meta.ProbeNames(), codec, copts...); err != nil {
		return err
	}
	// The current batch is empty after Flush: as in NewWriter, it puts
	// schema, metadata and dictionary on disk at once.
	if err := w.encode(w.cur); err != nil {
		return fmt.Errorf("write capture header: %w", err)
	}
	w.headerBytes = w.out.pos
	return nil
}

// footerMeta gives the file's footer the metadata as it is now (see
// Meta.Window), with the counts of the file's rows (Meta.Counts): the
// schema at the file's start had it as it was then, without counts.
func (w *Writer) footerMeta() error {
	m := *w.meta
	m.Counts = w.counts.final()
	if w.forgeCounts != nil && m.Counts != nil {
		w.forgeCounts(m.Counts)
	}
	js, err := m.encode()
	if err != nil {
		return err
	}
	w.aw.SetFooterMetadata(arrow.NewMetadata([]string{MetadataKey}, []string{js}))
	return nil
}

// finishFile writes the footer of the current file, syncs and closes it.
func (w *Writer) finishFile() error {
	err := w.footerMeta()
	if err == nil {
		err = w.aw.Close()
	}
	if err == nil {
		err = w.out.Flush()
	}
	if err != nil {
		return fmt.Errorf("write footer: %w", err)
	}
	if f, ok := w.file.(*os.File); ok {
		if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	if w.file != nil {
		return w.file.Close()
	}
	return nil
}
