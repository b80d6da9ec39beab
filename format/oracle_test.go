package format_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/hostile"
)

// Arrow Go's IPC reader is no longer on any read path; it stays here as an
// oracle that shares no code with package arrowipc's reader.

// rowsOurs reads every row of path with format.Reader, as text: the fixed
// columns, then each field column as its value or "null". It returns
// Open's error or Err, and apart RecoverErr.
func rowsOurs(path string) (rows []string, recovered bool, cut, err error) {
	r, err := format.Open(path)
	if err != nil {
		return nil, false, nil, err
	}
	defer r.Close()
	fields := r.Schema.Fields()
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			var sb strings.Builder
			lost, ok := b.Lost(i)
			fmt.Fprintf(&sb, "%d %d %d %d %q %d", b.Time[i], b.CPU[i], b.PID[i], b.TID[i], b.Comm(i), b.Probe[i])
			if ok {
				fmt.Fprintf(&sb, " lost=%d", lost)
			}
			for ci := format.ColLost + 1; ci < len(fields); ci++ {
				c := b.Col(ci)
				switch {
				case !c.Valid(i):
					sb.WriteString(" null")
				case c.Type == format.String:
					fmt.Fprintf(&sb, " %q", c.Str(i))
				default:
					fmt.Fprintf(&sb, " %d", c.Int(i))
				}
			}
			rows = append(rows, sb.String())
		}
	}
	return rows, r.Recovered, r.RecoverErr, r.Err()
}

// rowsArrow reads every row of path with Arrow Go's reader, as rowsOurs
// writes them: through the footer, or, when Arrow Go's file reader refuses
// the file, as a stream after the magic. A panic is an error.
func rowsArrow(path string) (rows []string, streamed bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, _ := f.Stat()
	var recs []arrow.Record
	if fr, ferr := ipc.NewFileReader(f); ferr == nil {
		defer fr.Close()
		for i := 0; i < fr.NumRecords(); i++ {
			rec, err := fr.Record(i)
			if err != nil {
				return rows, false, err
			}
			rows = append(rows, arrowRows(rec)...)
		}
		return rows, false, nil
	}
	sr, err := ipc.NewReader(io.NewSectionReader(f, 8, st.Size()-8))
	if err != nil {
		return nil, true, err
	}
	defer sr.Release()
	for sr.Next() {
		recs = append(recs, sr.Record())
		rows = append(rows, arrowRows(sr.Record())...)
	}
	return rows, true, sr.Err()
}

func arrowRows(rec arrow.Record) []string {
	var rows []string
	probe := rec.Column(format.ColProbe).(*array.Dictionary).Indices().(*array.Uint16)
	lost := rec.Column(format.ColLost).(*array.Uint64)
	for i := 0; i < int(rec.NumRows()); i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%d %d %d %d %q %d", rec.Column(format.ColTime).(*array.Int64).Value(i),
			rec.Column(format.ColCPU).(*array.Uint16).Value(i), rec.Column(format.ColPID).(*array.Uint32).Value(i),
			rec.Column(format.ColTID).(*array.Uint32).Value(i), rec.Column(format.ColComm).(*array.StringView).Value(i),
			probe.Value(i))
		if lost.IsValid(i) {
			fmt.Fprintf(&sb, " lost=%d", lost.Value(i))
		}
		for ci := format.ColLost + 1; ci < int(rec.NumCols()); ci++ {
			c := rec.Column(ci)
			switch a := c.(type) {
			case *array.StringView:
				if a.IsNull(i) {
					sb.WriteString(" null")
				} else {
					fmt.Fprintf(&sb, " %q", a.Value(i))
				}
			default:
				if c.IsNull(i) {
					sb.WriteString(" null")
					continue
				}
				var v int64
				switch a := c.(type) {
				case *array.Int8:
					v = int64(a.Value(i))
				case *array.Int16:
					v = int64(a.Value(i))
				case *array.Int32:
					v = int64(a.Value(i))
				case *array.Int64:
					v = a.Value(i)
				case *array.Uint8:
					v = int64(a.Value(i))
				case *array.Uint16:
					v = int64(a.Value(i))
				case *array.Uint32:
					v = int64(a.Value(i))
				case *array.Uint64:
					v = int64(a.Value(i))
				}
				fmt.Fprintf(&sb, " %d", v)
			}
		}
		rows = append(rows, sb.String())
	}
	return rows
}

// compareWithArrow reads path both ways. Where both read it whole they must
// agree row for row. A file that ours reads whole and Arrow Go refuses is
// an error unless it is a recovered one (Arrow Go's stream reader stops at
// the cut with an error; ours reads up to the last complete batch, which
// must be what Arrow Go read before failing). Files ours refuses are not
// given to Arrow Go: it would allocate what they declare.
func compareWithArrow(t *testing.T, name, path string) (oursOK bool) {
	t.Helper()
	ours, recovered, cut, err := rowsOurs(path)
	if err != nil {
		t.Logf("%s: ours refuses: %v", name, err)
		return false
	}
	if errors.Is(cut, format.ErrCorrupt) {
		// Stopped at a message failing a check, not at a cut: Arrow Go
		// could read on into unchecked lengths.
		t.Logf("%s: ours recovers %d rows and stops at a bad message: %v", name, len(ours), cut)
		return false
	}
	theirs, streamed, aerr := rowsArrow(path)
	switch {
	case recovered != streamed:
		t.Errorf("%s: ours recovered %v, Arrow Go read it as a stream %v (%v)", name, recovered, streamed, aerr)
	case aerr != nil && !recovered:
		t.Errorf("%s: ours reads %d rows, Arrow Go refuses: %v", name, len(ours), aerr)
	case aerr != nil:
		// A cut stream: Arrow Go reads the same whole batches, then fails at the cut.
		t.Logf("%s: recovered, Arrow Go stops at the cut: %v", name, aerr)
	}
	if len(ours) != len(theirs) {
		t.Errorf("%s: ours %d rows, Arrow Go %d", name, len(ours), len(theirs))
		return true
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Errorf("%s row %d:\nours  %s\narrow %s", name, i, ours[i], theirs[i])
			return true
		}
	}
	return true
}

// rewriteWithArrow copies capture in to out with Arrow Go's reader and
// writer.
func rewriteWithArrow(in, out string, comp format.Compression) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	fr, err := ipc.NewFileReader(f)
	if err != nil {
		return err
	}
	defer fr.Close()
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	defer o.Close()
	opts := []ipc.Option{ipc.WithSchema(fr.Schema())}
	switch comp {
	case format.Zstd:
		opts = append(opts, ipc.WithZstd())
	case format.LZ4:
		opts = append(opts, ipc.WithLZ4())
	}
	fw, err := ipc.NewFileWriter(o, opts...)
	if err != nil {
		return err
	}
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.Record(i)
		if err != nil {
			return err
		}
		if err := fw.Write(rec); err != nil {
			return err
		}
	}
	return fw.Close()
}

// corpus returns the committed inputs of a fuzz target.
func corpus(t *testing.T, target string) map[string][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.TrimSpace(strings.TrimPrefix(string(b), "go test fuzz v1\n"))
		v, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(s, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[target+"/"+filepath.Base(f)] = []byte(v)
	}
	return out
}

// TestArrowOracle reads captures with format.Reader and with Arrow Go's
// reader and wants the same rows: the seed-like stream in each codec, the
// fuzz seeds (footerless and cut ones included), the committed fuzz corpus
// and the forged captures of internal/hostile.
func TestArrowOracle(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, comp := range []format.Compression{format.Zstd, format.LZ4, format.None} {
		p := filepath.Join(dir, "stream-"+string(comp))
		if err := formattest.WriteFile(p, 100000, nil, format.WriterOptions{Compression: comp}, 1000); err != nil {
			t.Fatal(err)
		}
		files["stream/"+string(comp)] = p
		fixed := p + ".repaired"
		if _, err := format.Repair(p, fixed); err != nil {
			t.Fatal(err)
		}
		files["stream/"+string(comp)+"/repaired"] = fixed
	}
	// The other way: files Arrow Go's writer wrote, which leaves empty
	// compressed buffers without their length prefix, must read the same.
	for _, comp := range []format.Compression{format.Zstd, format.LZ4, format.None} {
		orig := files["stream/"+string(comp)]
		p := orig + ".arrowgo"
		if err := rewriteWithArrow(orig, p, comp); err != nil {
			t.Fatal(err)
		}
		files["stream/"+string(comp)+"/arrowgo"] = p
		want, _, _, err := rowsOurs(orig)
		got, recovered, _, gerr := rowsOurs(p)
		if err != nil || gerr != nil || recovered || !slices.Equal(got, want) {
			t.Errorf("%s rewritten by Arrow Go's writer: %d rows (recovered %v, %v), want %d (%v)", comp, len(got), recovered, gerr, len(want), err)
		}
	}
	seeds, err := format.FuzzSeeds(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{}
	for name, data := range seeds {
		inputs["seed/"+name] = data
	}
	for _, target := range []string{"FuzzOpen", "FuzzRepair"} {
		for name, data := range corpus(t, target) {
			inputs[name] = data
		}
	}
	for name, data := range inputs {
		p := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	for _, c := range hostile.Captures() {
		p := filepath.Join(dir, "hostile-"+c.Name)
		if err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		files["hostile/"+c.Name] = p
	}
	compared := 0
	for name, p := range files {
		if compareWithArrow(t, name, p) {
			compared++
		}
	}
	t.Logf("%d of %d files compared", compared, len(files))
	for _, must := range []string{"stream/zstd", "stream/lz4", "stream/none", "seed/zstd-footerless", "seed/none-cut", "seed/lz4-repaired"} {
		if _, err := os.Stat(files[must]); err != nil {
			t.Errorf("%s: %v", must, err)
		}
	}
	if ours, _, _, err := rowsOurs(files["hostile/corrupt-batch"]); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("corrupt-batch: %d rows, error %v; want ErrCorrupt (Arrow Go reads the flipped bytes)", len(ours), err)
	}
}
