package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// projBatch is what a projection read of one batch: every column it can
// read (the probe indices and every integer column, with validity).
type projBatch struct {
	rows  int
	probe []uint16
	cols  map[int]IntColumn
}

// readProjected reads path by projection, every column it can, and calls
// fn (if not nil) with each batch. It returns ErrNoProjection for a
// capture without a footer.
func readProjected(path string, fn func(b *projBatch) error) (batches int, err error) {
	r, err := Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	p, err := r.Project()
	if err != nil {
		return 0, err
	}
	defer p.Close()
	for p.Next() {
		b := &projBatch{rows: p.Len(), cols: map[int]IntColumn{}}
		if b.probe, err = p.Probe(); err != nil {
			return p.Batches(), err
		}
		for ci := range r.Schema.Fields() {
			if intType(r.Schema.Field(ci).Type) == TypeInvalid {
				continue // comm, probe, string fields
			}
			c, err := p.Ints(ci)
			if err != nil {
				return p.Batches(), err
			}
			// Touch every value as an analysis would.
			for i := 0; i < b.rows; i++ {
				if c.IsValid(i) {
					_ = c.Int(i)
				}
			}
			b.cols[ci] = c
		}
		if fn != nil {
			if err := fn(b); err != nil {
				return p.Batches(), err
			}
		}
	}
	return p.Batches(), p.Err()
}

// sameAsNext reads path both ways and, when both succeed, wants the same
// rows: probe indices, and every integer column's validity and values. A
// capture Next reads without error must be read by projection without error.
func sameAsNext(path string) error {
	r, err := Open(path)
	if err != nil {
		return nil
	}
	defer r.Close()
	if r.Recovered {
		return nil
	}
	type batch struct {
		rows  int
		probe []uint16
		vals  map[int][]int64
		valid map[int][]bool
	}
	var want []batch
	for r.Next() {
		b := r.Batch()
		w := batch{rows: b.Len, probe: append([]uint16(nil), b.Probe...), vals: map[int][]int64{}, valid: map[int][]bool{}}
		for ci := range r.Schema.Fields() {
			var get func(i int) (int64, bool)
			switch ci {
			case ColTime:
				get = func(i int) (int64, bool) { return b.Time[i], true }
			case ColCPU:
				get = func(i int) (int64, bool) { return int64(b.CPU[i]), true }
			case ColPID:
				get = func(i int) (int64, bool) { return int64(b.PID[i]), true }
			case ColTID:
				get = func(i int) (int64, bool) { return int64(b.TID[i]), true }
			case ColLost:
				get = func(i int) (int64, bool) { n, ok := b.Lost(i); return int64(n), ok }
			case ColComm, ColProbe:
				continue
			default:
				c := b.Col(ci)
				if c.Type == String {
					continue
				}
				get = func(i int) (int64, bool) { return c.Int(i), c.Valid(i) }
			}
			for i := 0; i < b.Len; i++ {
				v, ok := get(i)
				if !ok {
					v = 0
				}
				w.vals[ci] = append(w.vals[ci], v)
				w.valid[ci] = append(w.valid[ci], ok)
			}
		}
		want = append(want, w)
	}
	if r.Err() != nil {
		return nil
	}
	k := 0
	_, err = readProjected(path, func(b *projBatch) error {
		if k >= len(want) {
			return fmt.Errorf("projection read more batches than Next")
		}
		w := want[k]
		k++
		if b.rows != w.rows || !slicesEqual(b.probe, w.probe) {
			return fmt.Errorf("batch %d: %d rows, probes %v; Next: %d rows, %v", k-1, b.rows, b.probe, w.rows, w.probe)
		}
		for ci, vals := range w.vals {
			c, ok := b.cols[ci]
			if !ok {
				return fmt.Errorf("batch %d: column %d not read", k-1, ci)
			}
			for i := range vals {
				if c.IsValid(i) != w.valid[ci][i] || (c.IsValid(i) && c.Int(i) != vals[i]) {
					return fmt.Errorf("batch %d column %d row %d: %d (valid %v); Next: %d (valid %v)", k-1, ci, i, c.Int(i), c.IsValid(i), vals[i], w.valid[ci][i])
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("Next reads the capture, projection: %w", err)
	}
	if k != len(want) {
		return fmt.Errorf("projection read %d batches, Next %d", k, len(want))
	}
	return nil
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestProjectionSameAsNext(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{Zstd, LZ4, None} {
		for _, br := range []int{1, 7, 1000} {
			path := filepath.Join(dir, fmt.Sprintf("%s-%d", comp, br))
			writeRandom(t, path, comp, 1000, br)
			if err := sameAsNext(path); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
			}
			want := r.Batches()
			r.Close()
			if n, err := readProjected(path, nil); err != nil || n != want || n < 1000/br {
				t.Errorf("%s: read %d batches by projection, %d with Next: %v", path, n, want, err)
			}
			fixed := path + ".repaired"
			if _, err := Repair(path, fixed); err != nil {
				t.Fatal(err)
			}
			if err := sameAsNext(fixed); err != nil {
				t.Errorf("%s (repaired): %v", fixed, err)
			}
		}
	}
	empty := filepath.Join(dir, "empty")
	writeRandom(t, empty, Zstd, 0, 10)
	if n, err := readProjected(empty, nil); n > 1 || err != nil {
		t.Errorf("empty capture: %d batches, %v", n, err)
	}
	// A footerless capture is read up to its cut, as Next reads it; one
	// whose stream is out of order is left to Next.
	full := writeCapture(t, Zstd, 100, 10)
	footerless := filepath.Join(dir, "footerless")
	stream := streamPart(full)
	for _, cut := range []int{len(stream), len(stream) - 8, len(stream) - 100, len(stream) / 2} {
		os.WriteFile(footerless, stream[:cut], 0o600)
		r, err := Open(footerless)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for r.Next() {
			rows += r.Batch().Len
		}
		batches, cutErr := r.Batches(), fmt.Sprint(r.RecoverErr)
		r.Close()
		r, _ = Open(footerless)
		p, err := r.Project()
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		prows := 0
		for p.Next() {
			prows += p.Len()
		}
		if p.Err() != nil || prows != rows || p.NumBatches() != batches || fmt.Sprint(p.RecoverErr()) != cutErr || !p.Recovered() {
			t.Errorf("cut at %d: projection read %d rows of %d batches, cut %v (%v); Next: %d rows of %d batches, cut %s",
				cut, prows, p.NumBatches(), p.RecoverErr(), p.Err(), rows, batches, cutErr)
		}
		r.Close()
	}
	msgs := walkMessages(t, full)
	swapped := bytes.Clone(stream[:msgs[1].Off])
	swapped = append(swapped, stream[msgs[2].Off:msgs[3].Off]...) // a record batch before the dictionary
	os.WriteFile(footerless, swapped, 0o600)
	if r, err := Open(footerless); err == nil {
		if _, err := r.Project(); !errors.Is(err, ErrNoProjection) {
			t.Errorf("stream without its dictionary: %v, want ErrNoProjection", err)
		}
		r.Close()
	}
	r, err := Open(filepath.Join(dir, "zstd-7"))
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	if _, err := r.Project(); !errors.Is(err, ErrNoProjection) {
		t.Errorf("Project after Next: %v, want ErrNoProjection", err)
	}
	r.Close()
}

// TestProjectionHostile patches the buffers a projection reads (time, cpu)
// to declare too much, and wants a clear error having allocated little.
func TestProjectionHostile(t *testing.T) {
	dir := t.TempDir()
	big := writeCapture(t, Zstd, 20000, 1<<20) // time is random: stored, room for a bomb
	small := writeCapture(t, Zstd, 50, 1<<20)
	put64 := func(data []byte, at int64, v uint64) { binary.LittleEndian.PutUint64(data[at:], v) }
	timeBuf := func(m msgInfo) bufInfo { return m.Buffers[1] }
	cases := []struct {
		name  string
		base  []byte
		patch func(d []byte, m msgInfo)
		limit bool
	}{
		{"uncompressed buffer 1 TiB", small, func(d []byte, m msgInfo) { put64(d, m.Body+timeBuf(m).Off, 1<<40) }, true},
		{"uncompressed buffer 2^64-2", small, func(d []byte, m msgInfo) { put64(d, m.Body+timeBuf(m).Off, 1<<64-2) }, true},
		// The frame states its size: refused before 200 MiB are allocated.
		{"uncompressed buffers 200+200 MiB", small, func(d []byte, m msgInfo) {
			put64(d, m.Body+timeBuf(m).Off, 200<<20)
			put64(d, m.Body+m.Buffers[3].Off, 200<<20)
		}, false},
		{"decompression bomb 300 MiB", big, func(d []byte, m msgInfo) {
			b := timeBuf(m)
			frame := bombFrame(300 << 20)
			put64(d, m.Body+b.Off, 300<<20)
			copy(d[m.Body+b.Off+8:], frame)
		}, true},
		{"frame longer than declared", big, func(d []byte, m msgInfo) {
			b := timeBuf(m)
			frame := bombFrame(20 << 20)
			put64(d, m.Body+b.Off, 1<<20)
			copy(d[m.Body+b.Off+8:], frame)
		}, false},
		{"zstd window 1 GiB", small, func(d []byte, m msgInfo) {
			b := timeBuf(m)
			put64(d, m.Body+b.Off, 1)
			copy(d[m.Body+b.Off+8:], windowFrame())
		}, true},
		{"buffer outside its body", small, func(d []byte, m msgInfo) { put64(d, timeBuf(m).At+8, 1<<40) }, false},
		{"values shorter than the rows", small, func(d []byte, m msgInfo) { put64(d, timeBuf(m).At+8, 0) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(tc.base)
			tc.patch(data, largestRecord(walkMessages(t, data)))
			path := filepath.Join(dir, "hostile.arrow")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := readProjected(path, nil)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%v (allocated %s)", err, sizeStr(alloc))
			if err == nil {
				t.Fatal("read without error")
			}
			if tc.limit && !errors.Is(err, ErrLimit) {
				t.Errorf("error %q does not wrap ErrLimit", err)
			}
			if alloc > 32<<20 {
				t.Errorf("allocated %s reading a %s file", sizeStr(alloc), sizeStr(uint64(len(data))))
			}
		})
	}
}

// fuzzCorpus returns the committed inputs of another fuzz target.
func fuzzCorpus(tb testing.TB, target string) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		s := strings.TrimSpace(strings.TrimPrefix(string(b), "go test fuzz v1\n"))
		if !strings.HasPrefix(s, "[]byte(") || !strings.HasSuffix(s, ")") {
			tb.Fatalf("%s: not a []byte corpus entry", f)
		}
		v, err := strconv.Unquote(s[len("[]byte(") : len(s)-1])
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out = append(out, []byte(v))
	}
	if len(out) == 0 {
		tb.Fatalf("no corpus for %s", target)
	}
	return out
}

// FuzzProject reads arbitrary bytes as a capture by projection, every
// column it can: no panic, no allocation beyond readBound, and where Next
// reads the capture the projection reads the same values. It starts from
// FuzzOpen's committed corpus and seeds.
func FuzzProject(f *testing.F) {
	for _, data := range fuzzCorpus(f, "FuzzOpen") {
		f.Add(data)
	}
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
		readProjected(in, nil)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > readBound {
			t.Fatalf("reading %d bytes allocated %s", len(data), sizeStr(alloc))
		}
		if err := sameAsNext(in); err != nil {
			t.Fatal(err)
		}
	})
}
