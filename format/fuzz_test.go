package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// readBound is the most reading any capture may allocate (see limits.go):
// one batch's metadata, body, decompressed buffers and zstd window, and
// the same again for Repair's copy, plus slack for the small things.
const readBound = 2*(MaxMessageMeta+2*MaxBatchBytes+MaxZstdWindow) + 64<<20

// fuzzSeeds is FuzzSeeds in a scratch directory of tb's: the captures
// that testdata/fuzz/Fuzz{Open,Repair}/seed-* hold.
func fuzzSeeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	seeds, err := FuzzSeeds(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return seeds
}

// readEverything opens path and touches every value of every row the way
// the analyses do; it returns how many rows it read, or Open's error.
func readEverything(path string) (rows int64, recovered bool, err error) {
	r, err := Open(path)
	if err != nil {
		return 0, false, err
	}
	defer r.Close()
	_, _ = r.StackTable()
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			_, _, _, _ = b.Time[i], b.CPU[i], b.PID[i], b.TID[i]
			_ = b.Comm(i)
			p := &r.Meta.Probes[b.Probe[i]]
			if _, ok := b.Lost(i); ok {
				continue
			}
			for _, f := range p.Fields {
				c := b.Col(r.Column(f.Column))
				if c.Valid(i) {
					_, _ = c.Int(i), c.Str(i)
				}
			}
		}
		rows += int64(b.Len)
	}
	_ = r.Meta.WallTime(0)
	return rows, r.Recovered, r.Err()
}

// scratchDir is a directory on tmpfs when there is one, since Repair
// syncs. Fuzzing workers are killed rather than cleaned up, so it is named
// after the process and the directories of dead processes are removed.
func scratchDir(tb testing.TB) string {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return tb.TempDir()
	}
	old, _ := filepath.Glob("/dev/shm/bpftape-fuzz-*")
	for _, d := range old {
		pid, err := strconv.Atoi(strings.TrimPrefix(d, "/dev/shm/bpftape-fuzz-"))
		if err == nil && processGone(pid) {
			os.RemoveAll(d)
		}
	}
	dir := fmt.Sprintf("/dev/shm/bpftape-fuzz-%d", os.Getpid())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// readSelected reads path as an analysis of a few columns does: time, tid
// and the first field column decoded (Reader.Select), two goroutines
// reading ahead. It returns how many rows it read, and Open's error or Err.
func readSelected(path string) (rows int64, err error) {
	r, err := Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cols := []int{ColTime, ColTID}
	if len(r.types) > numFixed {
		cols = append(cols, numFixed)
	}
	r.Select(cols)
	r.ReadAhead = 2
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			_, _, _ = b.Time[i], b.TID[i], r.Meta.Probes[b.Probe[i]]
			if _, ok := b.Lost(i); ok {
				_ = b.CPU[i]
				continue
			}
			if len(cols) > 2 {
				if c := b.Col(numFixed); c.Valid(i) {
					_, _ = c.Int(i), c.Str(i)
				}
			}
		}
		rows += int64(b.Len)
	}
	return rows, r.Err()
}

// FuzzOpen reads arbitrary bytes as a capture, every value of every row,
// then a few columns as an analysis does: no panic, no allocation beyond
// readBound (each), and a capture read whole without error is read as
// far by the columns selected, without error.
func FuzzOpen(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	in := filepath.Join(scratchDir(f), "in.arrow")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(in, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rows, _, err := readEverything(in)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > readBound {
			t.Fatalf("reading %d bytes allocated %s", len(data), sizeStr(alloc))
		}
		runtime.ReadMemStats(&before)
		sel, selErr := readSelected(in)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*readBound {
			t.Fatalf("reading %d bytes by columns, two batches ahead, allocated %s", len(data), sizeStr(alloc))
		}
		if err == nil && (selErr != nil || sel != rows) {
			t.Fatalf("every column: %d rows; selected columns: %d rows, %v", rows, sel, selErr)
		}
	})
}

// FuzzRepair repairs arbitrary bytes as 'bpftape repair' does: no panic,
// and a repaired file always opens as a complete capture with the rows
// Repair reported. It shares FuzzOpen's seeds (see FuzzSeeds).
func FuzzRepair(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	dir := scratchDir(f)
	in, out := filepath.Join(dir, "in.arrow"), filepath.Join(dir, "out.arrow")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(in, data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(out)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Repair(in, out)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > readBound {
			t.Fatalf("repairing %d bytes allocated %s", len(data), sizeStr(alloc))
		}
		if err != nil {
			return
		}
		rows, recovered, err := readEverything(out)
		if err != nil || recovered || rows != res.Rows {
			t.Fatalf("repaired file: %d rows (Repair wrote %d), recovered %v, error %v", rows, res.Rows, recovered, err)
		}
	})
}

// FuzzStackTable decodes arbitrary JSON as a stack table part: no panic,
// an error is ErrStackTable or ErrLimit, the bytes allocated stay in
// proportion to the input's, and a part that decodes is what
// json.Unmarshal, the decoder before, makes of it.
func FuzzStackTable(f *testing.F) {
	for _, js := range StackTableSeeds() {
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		part := encodeJSON(js)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := decodeStackTable(part, nil)
		runtime.ReadMemStats(&after)
		// An empty entry of 3 bytes takes 64 at most, twice (see chunks);
		// the decoders take a few MiB.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64*uint64(len(js))+16<<20 {
			t.Fatalf("decoding %d bytes of JSON allocated %s", len(js), sizeStr(alloc))
		}
		if err != nil && !errors.Is(err, ErrStackTable) && !errors.Is(err, ErrLimit) {
			t.Fatalf("error %v is neither ErrStackTable nor ErrLimit", err)
		}
		var want StackTable
		werr := json.Unmarshal(js, &want)
		switch {
		case errors.Is(err, ErrLimit):
			// Within the limits json.Unmarshal has none of.
		case err != nil && werr == nil:
			t.Fatalf("decode: %v; json.Unmarshal: no error", err)
		case err == nil && werr != nil && !strings.Contains(werr.Error(), "exceeded max depth"):
			// (An entry is nested less deep in a part than in the table.)
			t.Fatalf("decode: no error; json.Unmarshal: %v", werr)
		case err == nil && werr == nil && !got.Equal(&want) && !repeatsField(js):
			t.Fatalf("decoded\n %+v\njson.Unmarshal\n %+v", got, &want)
		}
	})
}

// repeatsField reports whether the object js has a table field twice (a
// key json.Unmarshal matches with one, without regard to case): it decodes
// the second into the first's entries, where a part replaces them.
func repeatsField(js []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(js))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		for _, f := range []string{"stacks", "objects", "maps", "symbols", "processes"} {
			if strings.EqualFold(key, f) {
				if seen[f] {
					return true
				}
				seen[f] = true
			}
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
