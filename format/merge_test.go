package format

import (
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type mergeRow struct {
	host  string
	probe string
	t     int64
	lost  uint64
	ints  map[string]int64
	strs  map[string]string
	tid   uint32
}

// writeInput writes n random events (and a loss record every 50) and
// returns what it wrote, by probe name and field name.
func writeInput(t *testing.T, path string, m *Meta, seed int64, n int) []mergeRow {
	t.Helper()
	w, err := Create(path, m, WriterOptions{BatchRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	var rows []mergeRow
	tm := m.StartBoot
	for i := 0; i < n; i++ {
		tm += 1 + rng.Int63n(1000)
		if i%50 == 49 {
			p := uint16(rng.Intn(len(m.Probes)))
			if err := w.Lost(p, 1, tm, uint64(i)); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, mergeRow{host: m.Host, probe: m.Probes[p].Name, t: tm, lost: uint64(i)})
			continue
		}
		e := randEvent(rng, m, tm)
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
		r := mergeRow{host: m.Host, probe: m.Probes[e.Probe].Name, t: tm, tid: e.TID, ints: map[string]int64{}, strs: map[string]string{}}
		for fi, f := range m.Probes[e.Probe].Fields {
			if f.Type == String {
				r.strs[f.Name] = string(e.Strs[fi])
			} else {
				r.ints[f.Name] = truncInt(f.Type, e.Ints[fi])
			}
		}
		rows = append(rows, r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// readMerged reads every row of a capture as mergeRows.
func readMerged(t *testing.T, path string) (*Meta, []mergeRow) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []mergeRow
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			p := &r.Meta.Probes[b.Probe[i]]
			row := mergeRow{probe: p.Name, t: b.Time[i], tid: b.TID[i]}
			if n, ok := b.Lost(i); ok {
				row.lost = n
				rows = append(rows, row)
				continue
			}
			row.ints, row.strs = map[string]int64{}, map[string]string{}
			for _, f := range p.Fields {
				c := b.Col(r.Column(f.Column))
				if !c.Valid(i) {
					t.Fatalf("probe %s field %s is null", p.Name, f.Name)
				}
				switch {
				case f.Name == HostField:
					row.host = c.Str(i)
				case f.Type == String:
					row.strs[f.Name] = c.Str(i)
				default:
					row.ints[f.Name] = c.Int(i)
				}
			}
			rows = append(rows, row)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Meta, rows
}

func TestMergeHosts(t *testing.T) {
	dir := t.TempDir()
	ma, mb := testMeta(), testMeta()
	ma.Host, mb.Host = "host-a", "host-b"
	ma.Probes[1].BuildID = "a1"
	mb.Probes[1].BuildID = "b2"
	// Host b booted 3 s later (on the wall clock) and started 10 s later.
	mb.StartWall = ma.StartWall.Add(10 * time.Second)
	mb.StartBoot = ma.StartBoot + int64(7*time.Second)
	mb.Probes[2].Spec = "ur:/bin/y:f" // "ret" means something else on b
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	ra := writeInput(t, a, ma, 1, 500)
	rb := writeInput(t, b, mb, 2, 400)
	out := filepath.Join(dir, "m.arrow")
	// Give b first: host order follows the command line, the clock the first start.
	res, err := Merge(out, []string{b, a}, MergeOptions{Tool: "t", CommandLine: []string{"bpftape", "merge"}})
	if err != nil {
		t.Fatal(err)
	}
	m, got := readMerged(t, out)
	if m.Host != "host-b,host-a" || m.StartWall != ma.StartWall || m.StartBoot != ma.StartBoot || len(m.Inputs) != 2 {
		t.Fatalf("merged meta: host %q, start %v/%d, %d inputs", m.Host, m.StartWall, m.StartBoot, len(m.Inputs))
	}
	if m.Inputs[0].Extra["merge.file"] != b || m.Inputs[0].Extra["merge.time_shift_ns"] != "3000000000" || m.Inputs[1].Extra["merge.time_shift_ns"] != "0" {
		t.Errorf("inputs' extra: %v, %v", m.Inputs[0].Extra, m.Inputs[1].Extra)
	}
	var names []string
	for _, p := range m.Probes {
		names = append(names, p.Name)
		if p.Fields[len(p.Fields)-1].Name != HostField {
			t.Errorf("probe %s has no host field", p.Name)
		}
	}
	if strings.Join(names, " ") != "ints strs ret nofields ret@host-a" {
		t.Errorf("merged probes %v", names)
	}
	if _, p := m.Probe("strs"); p.BuildID != "b2,a1" {
		t.Errorf("strs build id %q", p.BuildID)
	}
	// b's rows first, then a's; b's times moved by 3 s; ret of a renamed.
	want := append(append([]mergeRow{}, rb...), ra...)
	if len(got) != len(want) || res.Events+res.LossRecords != uint64(len(want)) {
		t.Fatalf("%d rows (%d events, %d loss records), want %d", len(got), res.Events, res.LossRecords, len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.host == "host-b" {
			w.t += int64(3 * time.Second)
		}
		if w.probe == "ret" && w.host == "host-a" {
			w.probe = "ret@host-a"
		}
		if w.lost > 0 {
			w.host = "" // loss records do not say their host
		}
		if g.host != w.host || g.probe != w.probe || g.t != w.t || g.lost != w.lost || g.tid != w.tid || !sameMap(g.ints, w.ints) || !sameMap(g.strs, w.strs) {
			t.Fatalf("row %d: got %+v, want %+v", i, g, w)
		}
	}
	// Wall-clock times survive the shift.
	if !m.WallTime(rb[0].t + int64(3*time.Second)).Equal(mb.WallTime(rb[0].t)) {
		t.Error("wall-clock time of a shifted event changed")
	}

	// Merging the merged capture with another host keeps every event's host.
	mc := testMeta()
	mc.Host = "host-c"
	c := filepath.Join(dir, "c.arrow")
	rc := writeInput(t, c, mc, 3, 100)
	out2 := filepath.Join(dir, "m2.arrow")
	if _, err := Merge(out2, []string{out, c}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	m2, got2 := readMerged(t, out2)
	if len(got2) != len(want)+len(rc) || len(m2.Probes) != len(m.Probes) || m2.Host != "host-b,host-a,host-c" {
		t.Fatalf("re-merge: %d rows, probes %v, host %q", len(got2), m2.ProbeNames(), m2.Host)
	}
	hosts := map[string]int{}
	for _, r := range got2 {
		hosts[r.host]++
	}
	if hosts["host-a"] == 0 || hosts["host-b"] == 0 || hosts["host-c"] == 0 {
		t.Errorf("hosts after re-merge: %v", hosts)
	}
}

func sameMap[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestMergeParts merges overlapping parts of one host and boot in time order.
func TestMergeParts(t *testing.T) {
	dir := t.TempDir()
	m1, m2 := testMeta(), testMeta()
	m2.StartWall = m1.StartWall.Add(time.Millisecond + 300) // same boot, read a little later
	m2.StartBoot = m1.StartBoot + int64(time.Millisecond)
	p1, p2 := filepath.Join(dir, "p1.arrow"), filepath.Join(dir, "p2.arrow")
	writeInput(t, p1, m1, 4, 300)
	writeInput(t, p2, m2, 5, 300)
	out := filepath.Join(dir, "m.arrow")
	res, err := Merge(out, []string{p2, p1}, MergeOptions{Writer: WriterOptions{Compression: LZ4}})
	if err != nil {
		t.Fatal(err)
	}
	m, rows := readMerged(t, out)
	if m.Host != "testhost" || len(m.Probes) != 4 || m.Compression != "lz4" || m.Extra["time_base"] != "" {
		t.Errorf("meta: host %q, %d probes, %s, %q", m.Host, len(m.Probes), m.Compression, m.Extra["time_base"])
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].t < rows[i-1].t {
			t.Fatalf("row %d goes back in time", i)
		}
	}
	if res.Events+res.LossRecords != 600 || res.Lost == 0 {
		t.Errorf("result %+v", res)
	}
}

func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.arrow")
	writeInput(t, a, testMeta(), 1, 10)
	if _, err := Merge(a, []string{a}, MergeOptions{}); err == nil || !strings.Contains(err.Error(), "is the input") {
		t.Errorf("merge onto an input: %v", err)
	}
	m := testMeta()
	m.Probes[0].Fields[0].Name = "host"
	h := filepath.Join(dir, "h.arrow")
	writeInput(t, h, m, 1, 10)
	if _, err := Merge(filepath.Join(dir, "o.arrow"), []string{h}, MergeOptions{}); err == nil || !strings.Contains(err.Error(), `field named "host"`) {
		t.Errorf("probe with a host field: %v", err)
	}
}
