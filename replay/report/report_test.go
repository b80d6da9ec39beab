package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// writeCapture writes entry/return pairs with sizes, per-thread requests
// and a few loss records.
func writeCapture(t *testing.T, path, host string) {
	t.Helper()
	m := &format.Meta{Host: host, Kernel: "6.1.0", Tool: "bpftape test", CommandLine: []string{"bpftape", "record", "<x>"},
		StartBoot: 1e9, StartWall: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Probes: []format.Probe{
			{Name: "rx", Kind: "uprobe", Spec: "rx=u:/bin/q:recv(arg2)", Target: "/bin/q", BuildID: "ab12", Fields: []format.Field{{Name: "arg2", Type: format.Uint64}}},
			{Name: "rx_ret", Kind: "uretprobe", Spec: "rx_ret=ur:/bin/q:recv", Target: "/bin/q", BuildID: "ab12", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
			{Name: "msg", Kind: "usdt", Spec: "U:/bin/q:p:msg(str(arg0))", Fields: []format.Field{{Name: "arg0", Type: format.String}}},
		}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	tm := m.StartBoot
	for i := 0; i < 3000; i++ {
		tid := uint32(100 + i%3)
		size := uint64(64 << (i % 8))
		tm += 1000
		if err := w.Append(&format.Event{Time: tm, PID: 100, TID: tid, Probe: 0, Comm: []byte("q<&>"), Ints: []uint64{size}}); err != nil {
			t.Fatal(err)
		}
		tm += int64(500 << (i % 5))
		if err := w.Append(&format.Event{Time: tm, PID: 100, TID: tid, Probe: 1, Comm: []byte("q<&>"), Ints: []uint64{size}}); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			w.Append(&format.Event{Time: tm, PID: 100, TID: tid, Probe: 2, Comm: []byte("q"), Ints: []uint64{0}, Strs: [][]byte{[]byte("<script>alert(1)</script>")}})
			if err := w.Lost(0, 1, tm, 17); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	other := filepath.Join(dir, "other.arrow")
	writeCapture(t, path, "host<1>")
	writeCapture(t, other, "host2")
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	pass, err := Write(c, &b, Options{
		Version:   "9.9",
		Latencies: []LatencySpec{{"rx", "rx_ret"}},
		Requests:  []RequestsSpec{{"rx", "arg2", "rx_ret", "retval"}},
		Compares:  []CompareSpec{{ProbeA: "rx", FieldA: "arg2", ProbeB: "rx_ret", FieldB: "retval"}, {ProbeA: "rx", FieldA: "arg2", FileB: other, ProbeB: "rx", FieldB: "arg2"}},
		Now:       time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	if pass.Losses.Total != 6*17 {
		t.Errorf("losses %d, want %d", pass.Losses.Total, 6*17)
	}
	html := b.String()
	for _, want := range []string{
		`<div class="box loss" id="losses" role="alert">`, "102 events were lost", "host&lt;1&gt;", "ab12",
		"rx=u:/bin/q:recv(arg2)", `<h2 id="latency">`, `<h2 id="requests">`, `<h2 id="compare">`, "identical: every bucket count is equal",
		"bpftape latency " + path + " rx rx_ret", "lost events", "3,000 calls",
		"bpftape record &#39;&lt;x&gt;&#39;", // the command line shell-quoted, as info prints it
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Two numeric fields: two histogram cards and two field heat maps, plus
	// the time line and the latency map.
	if n := strings.Count(html, `<div class="card">`); n != 2+2 { // and the two request histograms
		t.Errorf("%d cards, want 4", n)
	}
	if n := strings.Count(html, "<svg "); n != 4 {
		t.Errorf("%d SVGs, want 4", n)
	}
	if n := strings.Count(html, "<title>"); n < 50 {
		t.Errorf("only %d <title> elements", n)
	}
	// Self-contained: nothing to load, no script, and the capture's strings escaped.
	for _, bad := range []string{"<script", "<link", "@import", "url(", "<img", "<iframe", "src=", "https://"} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if refs := regexp.MustCompile(`https?://[^"]*`).FindAllString(html, -1); len(refs) != strings.Count(html, "<svg ") {
		t.Errorf("references other than the SVG namespace: %v", refs)
	}
}

func TestReportNoLosses(t *testing.T) {
	var b bytes.Buffer
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 5, StartWall: time.Unix(0, 0), Probes: []format.Probe{{Name: "p", Kind: "tracepoint", Spec: "t:a:b"}}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := Write(c, &b, Options{MaxHeatmaps: -1}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"No events were lost", "No probe has a numeric field", `<h2 id="timeline">`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, `id="heatmaps"`) {
		t.Error("heat maps section without fields")
	}
}

// TestReportOneOpen checks that the report is built from the capture it is
// given, opened once, in two passes: the file at its path is replaced after
// the capture was opened (so that opening the path again would read
// another capture, or fail), and the report must be byte for byte the one
// built before the replacement, with every analysis a report can ask for.
func TestReportOneOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	other := filepath.Join(dir, "other.arrow")
	writeCapture(t, path, "host1")
	// The replacement has the same probes, and other events.
	m := &format.Meta{Host: "host2", StartBoot: 1e9, StartWall: time.Unix(0, 0), Probes: []format.Probe{
		{Name: "rx", Fields: []format.Field{{Name: "arg2", Type: format.Uint64}}},
		{Name: "rx_ret", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
		{Name: "msg", Fields: []format.Field{{Name: "arg0", Type: format.String}}},
	}}
	w, err := format.Create(other, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		w.Append(&format.Event{Time: 2e9 + int64(i)*1000, TID: 1, Probe: uint16(i % 2), Comm: []byte("x"), Ints: []uint64{1 << i}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	o := Options{
		Version:   "9.9",
		Latencies: []LatencySpec{{"rx", "rx_ret"}},
		Requests:  []RequestsSpec{{"rx", "arg2", "rx_ret", "retval"}},
		Compares:  []CompareSpec{{ProbeA: "rx", FieldA: "arg2", ProbeB: "rx_ret", FieldB: "retval"}},
		Now:       time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC),
	}
	build := func(replace bool) (string, int) {
		c, err := replay.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if replace {
			if err := os.Rename(path, path+".orig"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}
		var b bytes.Buffer
		if _, err := Write(c, &b, o); err != nil {
			t.Fatal(err)
		}
		return b.String(), c.Passes()
	}
	want, passes := build(false)
	if passes > 2 {
		t.Errorf("the report read the capture %d times, want at most 2", passes)
	}
	got, _ := build(true)
	if got != want {
		t.Errorf("the report changed when the capture's path was replaced after it was opened: it opened the path again")
	}
	if !strings.Contains(want, "host1") || strings.Contains(want, "host2") {
		t.Error("the report is not of the capture opened")
	}
}

// TestReportFiltered checks that a capture of filtered probes says so: the
// note that it is a subset, each filter, and what it rejected (from the
// footer), or that the count is unknown without one.
func TestReportFiltered(t *testing.T) {
	for _, footer := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "c.arrow")
		m := &format.Meta{Host: "h", StartBoot: 5, StartWall: time.Unix(0, 0), Window: &format.Window{Start: 5},
			Probes: []format.Probe{{Name: "p", Kind: "uprobe", Spec: "u:./a:f(x)/x > 1/", Filter: "x > 1",
				Fields: []format.Field{{Name: "x", Type: format.Uint64}}}, {Name: "q", Kind: "tracepoint", Spec: "t:a:b"}}}
		w, err := format.Create(path, m, format.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if footer {
			w.Meta().Window.End = 10
			w.Meta().Probes[0].Filtered = 1234
		}
		w.Close()
		if !footer {
			// A killed recorder's file: the schema's metadata only.
			cut := filepath.Join(t.TempDir(), "cut.arrow")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cut, data[:len(data)-16], 0o600); err != nil {
				t.Fatal(err)
			}
			path = cut
		}
		c, err := replay.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := Write(c, &b, Options{MaxHeatmaps: -1}); err != nil {
			t.Fatal(err)
		}
		c.Close()
		html := b.String()
		want := []string{"A filtered subset", "<code>x &gt; 1</code>"}
		if footer {
			want = append(want, "1,234 events rejected in the kernel")
		} else {
			want = append(want, "is not recorded (the file has no footer)")
		}
		for _, w := range want {
			if !strings.Contains(html, w) {
				t.Errorf("footer %v: report lacks %q", footer, w)
			}
		}
		if n := strings.Count(html, "<span class=\"muted\">filter</span>"); n != 1 {
			t.Errorf("footer %v: %d filter lines, want 1 (probe q has none)", footer, n)
		}
	}
}
