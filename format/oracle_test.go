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
	"github.com/bpftape/bpftape/internal/testutil/hostile"
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

// verdict is what compareWithArrow made of a file.
type verdict int

const (
	refused  verdict = iota // ours refuses it: Open or Err fails
	stopped                 // ours recovers batches, then stops at a message failing a check
	compared                // ours reads it (whole, or recovered up to a cut), compared with Arrow Go
)

func (v verdict) String() string {
	return [...]string{"refused", "stopped at a bad message", "compared"}[v]
}

// compareWithArrow reads path both ways and returns its verdict and the
// rows ours read. Where both read it whole they must agree row for row. A
// file that ours reads whole and Arrow Go refuses is an error unless it is
// a recovered one (Arrow Go's stream reader stops at the cut with an
// error; ours reads up to the last complete batch, which must be what
// Arrow Go read before failing). Files ours refuses are not given to Arrow
// Go: it would allocate what they declare.
func compareWithArrow(t *testing.T, name, path string) (v verdict, rows int) {
	t.Helper()
	ours, recovered, cut, err := rowsOurs(path)
	if err != nil {
		t.Logf("%s: ours refuses: %v", name, err)
		return refused, len(ours)
	}
	if errors.Is(cut, format.ErrCorrupt) {
		// Stopped at a message failing a check, not at a cut: Arrow Go
		// could read on into unchecked lengths.
		t.Logf("%s: ours recovers %d rows and stops at a bad message: %v", name, len(ours), cut)
		return stopped, len(ours)
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
		return compared, len(ours)
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Errorf("%s row %d:\nours  %s\narrow %s", name, i, ours[i], theirs[i])
			break
		}
	}
	return compared, len(ours)
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
// and the forged captures of internal/testutil/hostile. Ours must read and compare
// every file but the few it must refuse (mustRefuse), which it must refuse:
// a reader that refuses what it should read fails here, not just logs it.
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
		if err != nil || gerr != nil || recovered || len(want) == 0 || !slices.Equal(got, want) {
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
	// The files ours must not read, and how it stops: the forged corrupt
	// batch and the fuzzers' crashers. Every other file (the writer's
	// streams, repaired and rewritten by Arrow Go, the fuzz seeds, footerless
	// and cut ones included, and the other forged captures) is a capture ours
	// must read and Arrow Go must agree on; a committed crasher not listed
	// here may go either way.
	mustRefuse := map[string]verdict{
		"hostile/corrupt-batch":                 refused,
		"FuzzOpen/crash-view-negative-length":   refused,
		"FuzzRepair/crash-view-negative-length": refused,
		"FuzzOpen/crash-buffers-past-vector":    stopped,
		"FuzzRepair/crash-buffers-past-vector":  stopped,
	}
	ncompared, nrows := 0, 0
	rows := map[string]int{}
	for name, p := range files {
		v, n := compareWithArrow(t, name, p)
		want, listed := mustRefuse[name]
		switch {
		case listed && v != want:
			t.Errorf("%s: %v, want %v", name, v, want)
		case !listed && v != compared && strings.Contains(name, "/crash-"):
			t.Logf("%s: a crasher, %v", name, v)
		case !listed && v != compared:
			t.Errorf("%s: %v, want it read and compared with Arrow Go", name, v)
		}
		if v == compared {
			ncompared++
			nrows += n
			rows[name] = n
		}
	}
	t.Logf("%d of %d files compared, %d rows", ncompared, len(files), nrows)
	for name := range mustRefuse {
		if _, ok := files[name]; !ok {
			t.Errorf("%s: not among the files (renamed?): its refusal is not checked", name)
		}
	}
	if ncompared == 0 || nrows == 0 {
		t.Errorf("%d of %d files compared, %d rows: the oracle checked nothing", ncompared, len(files), nrows)
	}
	// These must have been compared with rows in them: the recovered seeds
	// (footerless, cut), a repaired one, one with a stack table.
	for _, must := range []string{"seed/zstd-footerless", "seed/none-cut", "seed/lz4-repaired", "seed/stacks", "seed/stacks-footerless"} {
		if rows[must] == 0 {
			t.Errorf("%s: not compared, or no rows", must)
		}
	}
	// Each stream: 100,000 events and a loss record every 1,000.
	for _, comp := range []format.Compression{format.Zstd, format.LZ4, format.None} {
		for _, suffix := range []string{"", "/repaired", "/arrowgo"} {
			if name := "stream/" + string(comp) + suffix; rows[name] != 100100 {
				t.Errorf("%s: %d rows compared, want 100100", name, rows[name])
			}
		}
	}
	if ours, _, _, err := rowsOurs(files["hostile/corrupt-batch"]); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("corrupt-batch: %d rows, error %v; want ErrCorrupt (Arrow Go reads the flipped bytes)", len(ours), err)
	}
}
