package format

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
	"github.com/bpftape/bpftape/internal/outfile"
)

// RepairResult says what Repair kept.
type RepairResult struct {
	// Batches counts the input's batches copied, not the batches of no
	// rows that carry the parts of a large stack table ahead of them.
	Batches   int
	Rows      int64
	Recovered bool  // the input had no footer
	Cut       error // why reading stopped early, if it did
	// Skipped are the corrupt batches left out (of a file with a footer).
	Skipped []error
	// Left says what the Skipped batches held, as the output's metadata
	// says it (Meta.Extra[ExtraRepaired]); "" when none was skipped.
	Left string
}

// Repair copies every complete batch of in to a new standard capture out,
// the way to turn the file of a killed recorder into one any Arrow reader
// opens. out must not exist; it is written as package outfile writes every
// output (a temporary file renamed into place, never over the input).
func Repair(in, out string) (res RepairResult, err error) {
	return RepairWith(in, out, RepairOptions{})
}

// RepairReplace is Repair replacing out if it is an existing regular file.
func RepairReplace(in, out string) (res RepairResult, err error) {
	return RepairWith(in, out, RepairOptions{Force: true})
}

// RepairOptions are the options of RepairWith.
type RepairOptions struct {
	// Force replaces out if it is an existing regular file.
	Force bool
	// Progress, if set, is told after each batch read how many of the
	// batches of in have been read.
	Progress func(read, of int)
}

// RepairWith is Repair with options.
func RepairWith(in, out string, o RepairOptions) (res RepairResult, err error) {
	force := o.Force
	if _, err := outfile.Check(out, outfile.Options{Force: force, Inputs: []string{in}}); err != nil {
		return res, err
	}
	r, err := Open(in)
	if err != nil {
		return res, err
	}
	defer r.Close()
	r.SkipCorrupt = true
	res.Recovered = r.Recovered
	f, err := outfile.Create(out, outfile.Options{Force: force, Inputs: []string{in}})
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			f.Discard()
		} else {
			err = f.Commit()
		}
	}()
	// The batches are copied as their buffers, through the writer record
	// uses, with the schema (and metadata) and dictionary they were read
	// with, but for the counts of the input's rows (Meta.Counts): the
	// stream's schema has none, and the footer those of the rows copied.
	schema, err := schemaCounts(r.Schema, nil)
	if err != nil {
		return res, err
	}
	pw := newPosWriter(f)
	codec, copts := ipcCodec(Compression(r.Meta.Compression))
	fw, err := arrowipc.NewWriter(pw, schema, r.Meta.ProbeNames(), codec, copts...)
	if err != nil {
		return res, fmt.Errorf("write %s: %w", out, err)
	}
	var counts Counts
	counts.reset(r.Meta.Probes)
	widths := r.widths()
	// The stack table goes whole with the first batch: its last part, the
	// parts before it (of a table larger than one part) in batches of no
	// rows ahead of it, as a Writer writes them.
	stacks, err := r.StackTable()
	if err != nil {
		return res, err
	}
	none := noRows(len(r.Schema.Fields()))
	carry := func(part string) error {
		fw.SetBatchMetadata(arrow.NewMetadata([]string{StackTableKey}, []string{part}))
		if err := fw.WriteBatch(0, none); err != nil {
			return fmt.Errorf("write %s: %w", out, err)
		}
		counts.addBatch(0, none, widths, true)
		return nil
	}
	last, err := encodeStackPartsAhead(stacks, carry)
	if err != nil {
		return res, err
	}
	for r.Next() {
		if o.Progress != nil {
			// Batches counts those skipped as corrupt too.
			o.Progress(r.Batches(), r.NumBatches())
		}
		part := last != ""
		if part {
			fw.SetBatchMetadata(arrow.NewMetadata([]string{StackTableKey}, []string{last}))
			last = ""
		}
		if err := fw.WriteBatch(r.batch.Len, r.batch.data); err != nil {
			return res, fmt.Errorf("write %s: %w", out, err)
		}
		counts.addBatch(r.batch.Len, r.batch.data, widths, part)
		res.Batches++
		res.Rows += int64(r.batch.Len)
	}
	if err := r.Err(); err != nil {
		return res, err
	}
	// No batch to carry the table's last part: a batch of none does.
	if last != "" {
		if err := carry(last); err != nil {
			return res, err
		}
	}
	res.Cut = r.RecoverErr
	res.Skipped = r.Skipped
	final := counts.final()
	footer, err := schemaCounts(r.Schema, final)
	if err != nil {
		return res, err
	}
	if len(res.Skipped) > 0 {
		in, _ := r.Counts()
		res.Left = leftOut(len(res.Skipped), in, final)
		if prev := r.Meta.Extra[ExtraRepaired]; prev != "" {
			res.Left = prev + "; then " + res.Left
		}
		if footer, err = schemaExtra(footer, ExtraRepaired, res.Left); err != nil {
			return res, err
		}
	}
	fw.SetFooterMetadata(footer.Metadata())
	if err := fw.Close(); err != nil {
		return res, fmt.Errorf("write %s: %w", out, err)
	}
	if err := pw.Flush(); err != nil {
		return res, fmt.Errorf("write %s: %w", out, err)
	}
	return res, nil
}

// leftOut says what n corrupt batches left out held: the events the
// input's footer counts (in, nil if it has none it can trust) and the
// output's (out) do not.
func leftOut(n int, in, out *Counts) string {
	batches := "1 corrupt batch"
	if n > 1 {
		batches = fmt.Sprintf("%d corrupt batches", n)
	}
	s := "bpftape repair left out " + batches
	if in == nil || out == nil || len(in.Probes) != len(out.Probes) || in.Events < out.Events {
		return s + " (how many events: not known, the input's footer has no counts)"
	}
	s += fmt.Sprintf(" of %d events", in.Events-out.Events)
	var by []string
	for i := range in.Probes {
		if d := in.Probes[i].Events - out.Probes[i].Events; in.Probes[i].Events > out.Probes[i].Events {
			by = append(by, fmt.Sprintf("%s %d", in.Probes[i].Name, d))
		}
	}
	if len(by) > 0 {
		s += " (" + strings.Join(by, ", ") + ")"
	}
	if in.LossRecords > out.LossRecords {
		s += fmt.Sprintf(" and %d loss records", in.LossRecords-out.LossRecords)
	}
	return s
}

// schemaExtra returns schema with Meta.Extra[key] set to value in its
// bpftape metadata, the rest kept as it is.
func schemaExtra(schema *arrow.Schema, key, value string) (*arrow.Schema, error) {
	return editMeta(schema, func(obj map[string]json.RawMessage) (bool, error) {
		extra := map[string]string{}
		for k, v := range obj {
			// encoding/json matches keys without regard to case.
			if strings.EqualFold(k, "extra") {
				if err := json.Unmarshal(v, &extra); err != nil {
					return false, fmt.Errorf("bpftape metadata: extra: %w", err)
				}
				delete(obj, k)
			}
		}
		extra[key] = value
		js, err := json.Marshal(extra)
		obj["extra"] = js
		return true, err
	})
}

// schemaCounts returns schema with the counts c (Meta.Counts) in its
// bpftape metadata in place of those it has, or without any for a nil c.
// The rest of the metadata is kept as it is, keys this bpftape does not
// know included; a schema without counts to drop is returned unchanged.
func schemaCounts(schema *arrow.Schema, c *Counts) (*arrow.Schema, error) {
	return editMeta(schema, func(obj map[string]json.RawMessage) (bool, error) {
		// encoding/json matches keys without regard to case.
		had := false
		for k := range obj {
			if strings.EqualFold(k, "counts") {
				delete(obj, k)
				had = true
			}
		}
		if c == nil {
			return had, nil
		}
		js, err := json.Marshal(c)
		obj["counts"] = js
		return true, err
	})
}

// editMeta returns schema with its bpftape metadata, as a JSON object,
// changed by edit; schema itself when it has none, or edit changed
// nothing. Keys this bpftape does not know are kept.
func editMeta(schema *arrow.Schema, edit func(obj map[string]json.RawMessage) (changed bool, err error)) (*arrow.Schema, error) {
	md := schema.Metadata()
	i := md.FindKey(MetadataKey)
	if i < 0 {
		return schema, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(md.Values()[i]), &obj); err != nil {
		return nil, fmt.Errorf("bpftape metadata: %w", err)
	}
	if changed, err := edit(obj); err != nil || !changed {
		return schema, err
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	vals := slices.Clone(md.Values())
	vals[i] = string(js)
	nmd := arrow.NewMetadata(md.Keys(), vals)
	return arrow.NewSchema(schema.Fields(), &nmd), nil
}
