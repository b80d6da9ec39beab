package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// TestPairs checks which probes a report pairs for latency by itself.
func TestPairs(t *testing.T) {
	m := &format.Meta{Probes: []format.Probe{
		// 0, 1: a function's default names.
		{Name: "tick", Kind: "uprobe", Spec: "u:./p:tick", Target: "/bin/p"},
		{Name: "tick:return", Kind: "uretprobe", Spec: "ur:./p:tick", Target: "/bin/p"},
		// 2..4: malloc of two libraries; the return probe is the second's,
		// whose default names were made unique.
		{Name: "malloc", Kind: "uprobe", Spec: "u:libc:malloc", Target: "/lib/libc.so.6"},
		{Name: "malloc#2", Kind: "uprobe", Spec: "u:/opt/libc.so.6:malloc", Target: "/opt/libc.so.6"},
		{Name: "malloc:return", Kind: "uretprobe", Spec: "ur:/opt/libc.so.6:malloc", Target: "/opt/libc.so.6"},
		// 5, 6: named kernel probes of one function.
		{Name: "rd", Kind: "kprobe", Spec: "rd=k:vfs_read", Target: "vmlinux"},
		{Name: "rd_done", Kind: "kretprobe", Spec: "rd_done=kr:vfs_read(retval)", Target: "vmlinux"},
		// 7: a kprobe inside the function is no entry.
		{Name: "mid", Kind: "kprobe", Spec: "mid=k:vfs_write+4", Target: "vmlinux"},
		// 8, 9: fentry and fexit.
		{Name: "vfs_write", Kind: "fentry", Spec: "f:vfs_write", Target: "vmlinux"},
		{Name: "w", Kind: "fexit", Spec: "w=fr:vfs_write", Target: "vmlinux"},
		// 10..12: a filtered and an unfiltered entry: the unfiltered one pairs.
		{Name: "big", Kind: "uprobe", Spec: "big=u:./p:rx(size)/size > 9/", Target: "/bin/p", Filter: "size > 9"},
		{Name: "rx", Kind: "uprobe", Spec: "rx=u:./p:rx", Target: "/bin/p"},
		{Name: "rx_ret", Kind: "uretprobe", Spec: "rx_ret=ur:./p:rx", Target: "/bin/p"},
		// 13, 14: named so, of no function.
		{Name: "req", Kind: "usdt", Spec: "req=U:./p:req"},
		{Name: "req:return", Kind: "usdt", Spec: "req:return=U:./p:req_done"},
		// 15, 16: a kprobe and a fexit: kinds that do not pair, names that would.
		{Name: "foo", Kind: "kprobe", Spec: "k:foo", Target: "vmlinux"},
		{Name: "foo:return", Kind: "fexit", Spec: "fr:foo", Target: "vmlinux"},
		// 17, 18: the same symbol in two binaries.
		{Name: "a", Kind: "uprobe", Spec: "a=u:./p:f", Target: "/bin/p"},
		{Name: "b", Kind: "uretprobe", Spec: "b=ur:./q:f", Target: "/bin/q"},
		// 19, 20: specs that do not parse pair by name only.
		{Name: "x", Kind: "uprobe", Spec: "garbage"},
		{Name: "x:return", Kind: "uretprobe", Spec: "more garbage"},
		// 21: a return probe alone.
		{Name: "lone:return", Kind: "uretprobe", Spec: "ur:./p:lone", Target: "/bin/p"},
	}}
	var got []string
	for _, p := range Pairs(m) {
		got = append(got, p.Entry+" "+p.Return)
	}
	want := []string{"tick tick:return", "malloc#2 malloc:return", "rd rd_done", "vfs_write w", "rx rx_ret", "req req:return", "x x:return"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("pairs\n%q, want\n%q", got, want)
	}
	if p := Pairs(&format.Meta{}); len(p) != 0 {
		t.Errorf("pairs of no probes: %v", p)
	}
}

// writePairs writes a capture of n functions, each with an entry and a
// return probe of its default names and calls on one thread.
func writePairs(t *testing.T, path string, n int) {
	t.Helper()
	m := &format.Meta{Host: "h", StartBoot: 1e9, StartWall: time.Unix(0, 0)}
	for i := 0; i < n; i++ {
		fn := fmt.Sprintf("f%d", i)
		m.Probes = append(m.Probes,
			format.Probe{Name: fn, Kind: "uprobe", Spec: "u:./p:" + fn, Target: "/bin/p", Fields: []format.Field{{Name: "n", Type: format.Int32}}},
			format.Probe{Name: fn + ":return", Kind: "uretprobe", Spec: "ur:./p:" + fn, Target: "/bin/p", Fields: []format.Field{{Name: "retval", Type: format.Int64}}})
	}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tm := m.StartBoot
	for k := 0; k < 50; k++ {
		for i := 0; i < n; i++ {
			tm += 100
			w.Append(&format.Event{Time: tm, PID: 1, TID: 1, Probe: uint16(2 * i), Comm: []byte("p"), Ints: []uint64{uint64(k)}})
			tm += int64(1000 * (i + 1))
			w.Append(&format.Event{Time: tm, PID: 1, TID: 1, Probe: uint16(2*i + 1), Comm: []byte("p"), Ints: []uint64{0}})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReportFindsPairs checks that a report not asked for latencies shows
// those of the pairs it finds, at most MaxAutoLatencies of them, and that
// --latency, or -1, replaces them.
func TestReportFindsPairs(t *testing.T) {
	dir := t.TempDir()
	two, many := filepath.Join(dir, "two.arrow"), filepath.Join(dir, "many.arrow")
	writePairs(t, two, 2)
	writePairs(t, many, DefaultMaxAutoLatencies+3)
	report := func(path string, o Options) string {
		t.Helper()
		c, err := replay.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var b bytes.Buffer
		if _, err := Write(c, &b, o); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	sections := func(html string) int { return strings.Count(html, `<div class="analysis">`) }

	html := report(two, Options{})
	for _, want := range []string{`<h2 id="latency">`, "f0 → f0:return", "f1 → f1:return", "50 calls", "Entry and return probes the report paired",
		"bpftape latency " + two + " f0 f0:return"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := sections(html); n != 2 {
		t.Errorf("%d latency sections, want 2", n)
	}

	html = report(two, Options{Latencies: []LatencySpec{{"f1", "f1:return"}}})
	if n := sections(html); n != 1 || !strings.Contains(html, "f1 → f1:return") || strings.Contains(html, "the report paired") {
		t.Errorf("--latency f1: %d latency sections, want only it", n)
	}
	html = report(two, Options{MaxAutoLatencies: -1})
	if strings.Contains(html, `id="latency"`) {
		t.Error("a latency section with MaxAutoLatencies -1")
	}

	html = report(many, Options{})
	if n := sections(html); n != DefaultMaxAutoLatencies {
		t.Errorf("%d latency sections, want %d", n, DefaultMaxAutoLatencies)
	}
	if want := fmt.Sprintf("The first %d of %d pairs.", DefaultMaxAutoLatencies, DefaultMaxAutoLatencies+3); !strings.Contains(html, want) {
		t.Errorf("report lacks %q", want)
	}
	html = report(many, Options{MaxAutoLatencies: 3})
	if n := sections(html); n != 3 || !strings.Contains(html, "f2 → f2:return") || strings.Contains(html, "f3 → f3:return") {
		t.Errorf("MaxAutoLatencies 3: %d latency sections", n)
	}
}

// TestReportAddresses checks that a field marked as an address has no
// histogram or heat map, but is listed, labelled so, while an integer of
// the same probe has both; Options.Pointers draws it too.
func TestReportAddresses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1e9, StartWall: time.Unix(0, 0), Probes: []format.Probe{
		{Name: "rx", Kind: "uprobe", Spec: "u:./p:rx", Target: "/bin/p", Fields: []format.Field{
			{Name: "nc", Type: format.Uint64, Pointer: true}, {Name: "buf", Type: format.Uint64, Pointer: true}, {Name: "size", Type: format.Uint32}}},
	}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		w.Append(&format.Event{Time: 1e9 + int64(i)*1000, PID: 1, TID: 1, Comm: []byte("p"), Ints: []uint64{0x7ffd00001000, 0x55550000 + uint64(i)*64, uint64(i)}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	if _, err := Write(c, &b, Options{}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"nc uint64 (address)", "buf uint64 (address)", "size uint32", "have no histogram or heat map: rx nc, rx buf",
		"bpftape hist " + path + " rx size", "Heat map of rx size"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"bpftape hist " + path + " rx nc", "bpftape hist " + path + " rx buf", "Heat map of rx nc", "Heat map of rx buf", "size uint32 (address)"} {
		if strings.Contains(html, bad) {
			t.Errorf("report has %q", bad)
		}
	}
	if n := strings.Count(html, `<div class="card">`); n != 1 {
		t.Errorf("%d histogram cards, want 1 (size)", n)
	}
	if n := strings.Count(html, "<svg "); n != 2 {
		t.Errorf("%d SVGs, want 2 (the time line and size)", n)
	}

	b.Reset()
	if _, err := Write(c, &b, Options{Pointers: true}); err != nil {
		t.Fatal(err)
	}
	html = b.String()
	if n := strings.Count(html, `<div class="card">`); n != 3 || !strings.Contains(html, "bpftape hist "+path+" rx nc") || !strings.Contains(html, "Heat map of rx nc") {
		t.Errorf("Pointers: %d histogram cards, want 3", n)
	}
	if n := strings.Count(html, "<svg "); n != 4 {
		t.Errorf("Pointers: %d SVGs, want 4", n)
	}
}
