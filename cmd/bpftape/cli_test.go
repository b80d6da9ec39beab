package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// TestHelpTexts: every verb's --help has examples and lists its flags as
// they are typed (--flag; Go's flag package prints -flag), and the
// top-level help names --version.
func TestHelpTexts(t *testing.T) {
	var out, errb bytes.Buffer
	run([]string{"--help"}, &out, &errb)
	if !strings.Contains(out.String(), "--version") {
		t.Errorf("top-level help does not name --version:\n%s", out.String())
	}
	for name := range verbs {
		out.Reset()
		if code := run([]string{name, "--help"}, &out, &errb); code != exitOK {
			t.Errorf("%s --help: exit %d", name, code)
		}
		h := out.String()
		if !strings.Contains(h, "\nExample") {
			t.Errorf("%s --help has no examples", name)
		}
		if strings.HasSuffix(h, "Flags:\n") {
			t.Errorf("%s --help ends with a Flags: heading and no flag", name)
		}
		if i := strings.Index(h, "\nFlags:"); i >= 0 {
			for _, l := range strings.Split(h[i:], "\n") {
				if strings.HasPrefix(l, "  -") && !strings.HasPrefix(l, "  --") && len(strings.Fields(l)[0]) > 2 {
					t.Errorf("%s --help lists %q with one dash", name, l)
				}
			}
		}
		var viaHelp bytes.Buffer
		if code := run([]string{"help", name}, &viaHelp, &errb); code != exitOK || viaHelp.String() != h {
			t.Errorf("bpftape help %s: exit %d, not what %s --help prints", name, code, name)
		}
	}
	errb.Reset()
	if code := run([]string{"events", "x.arrow", "--json"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "unknown flag --json") {
		t.Errorf("unknown flag: exit %d, %q", code, errb.String())
	}
}

// TestFilterMatchesNothing: a filter that selects no event says so on
// stderr, with values the capture has, instead of an empty result alone;
// and hist's JSON is stamped with the capture's time, not the replay's.
func TestFilterMatchesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := formattest.Meta()
	m.StartWall = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := formattest.WriteFile(path, 1000, m, format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"events", path, "--pid", "999999"},
		{"events", path, "--comm", "nosuch"},
		{"hist", path, "rx", "arg2", "--pid", "999999"},
		{"latency", path, "rx", "rx_ret", "--comm", "nosuch"},
		{"events", path, "--jsonl", "--pid", "999999"},
		{"export", path, "-f", "csv", "-o", "-", "--comm", "nosuch"},
		{"export", path, "-f", "perfetto", "-o", filepath.Join(filepath.Dir(path), "t.pftrace"), "--pid", "999999"},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != exitOK || !strings.Contains(errb.String(), "NOTE:") || !strings.Contains(errb.String(), "filters") {
			t.Errorf("%v: exit %d, stderr %q: want a note that nothing matched", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"hist", path, "rx", "arg2", "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("hist --json: exit %d: %s", code, errb.String())
	}
	var doc struct{ TS string }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("hist --json is not one JSON document: %v\n%s", err, out.String())
	}
	if want := m.StartWall.Local().Format("2006-01-02 15:04:05"); doc.TS != want {
		t.Errorf("hist --json ts %q, want the capture's %q", doc.TS, want)
	}
}

// TestWindowFlags: a window that is empty or before the capture start,
// and a duration without a unit, are usage errors that say what to give,
// in every verb that takes --from and --to; --to 0s does not mean "no
// end".
func TestWindowFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	if err := formattest.WriteFile(path, 100, formattest.Meta(), format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	for _, verb := range [][]string{{"count", path}, {"hist", path, "rx", "arg2"}, {"events", path}, {"export", path, "-f", "csv", "-o", "-"}} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--to", "0s"}, "--to 0s leaves no time after the capture start"},
			{[]string{"--to", "-1s"}, "--to -1s leaves no time after the capture start"},
			{[]string{"--from", "-5s", "--to", "-1s"}, "--from -5s is before the capture start"},
			{[]string{"--from", "1x"}, `--from '1x': not a duration: give a number and a unit, such as 1.5s, 200ms or 2m, or a number of seconds`},
			{[]string{"--to", "2q"}, `--to '2q': not a duration`},
			{[]string{"--from", "2", "--to", "1"}, "--to 1s is not after --from 2s"}, // seconds, as record -d takes
			{[]string{"--from", "1.001", "--to", "1.001"}, "--to 1.001s is not after --from 1.001s"},
			{[]string{"--from", "1_0"}, `--from '1_0': not a duration`},
			{[]string{"--from", "2s", "--to", "1s"}, "--to 1s is not after --from 2s"},
		} {
			args := append(append([]string{}, verb...), c.args...)
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) || out.Len() > 0 {
				t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want %d and %q", args, code, out.Len(), errb.String(), exitUsage, c.want)
			}
		}
	}
}

// TestBadValuesAreUsage: a flag value a verb refuses after parsing is a
// usage error (exit 2) like one the flag package refuses, and says what
// to give instead.
func TestBadValuesAreUsage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	if err := formattest.WriteFile(path, 100, formattest.Meta(), format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "h.svg")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"events", path, "--time", "foo"}, `--time "foo": use rel, wall or none`},
		{[]string{"events", path, "-f", `rx "x=%d %d", arg2`}, `-f 'rx "x=%d %d", arg2': 2 verbs but 1 fields (see`},
		{[]string{"heatmap", path, "rx", "arg2", "--min", "100", "--max", "10", "-o", svg}, "max 10 is below min 100"},
		{[]string{"heatmap", path, "rx", "arg2", "--step", "1ns", "-o", svg}, "give a longer --step, or --from and --to"},
		{[]string{"hist", path, "rx", "arg2", "--interval", "1ns"}, "give a longer --interval, or --from and --to"},
		{[]string{"compare", path, "rx", "arg2", "rx_ret"}, `"rx" is not a file: four arguments are FILE FILE2 PROBE FIELD`},
		{[]string{"report", path, "--heatmaps", "-1", "-o", filepath.Join(dir, "r.html")}, "--heatmaps and --pairs must be 0 or more"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args[:1], code, errb.String(), exitUsage, c.want)
		}
	}
}

// TestLatencySwappedNote: a latency whose entry is a return probe and
// whose return is not notes that the two may be swapped; the right order
// notes nothing. A request whose item and end probe are one is refused.
func TestLatencySwappedNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	if err := formattest.WriteFile(path, 100, formattest.Meta(), format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		note string
	}{
		{[]string{"latency", path, "rx_ret", "rx"}, "NOTE: the entry probe rx_ret is a uretprobe and the return probe rx a uprobe: were they swapped? (bpftape latency FILE rx rx_ret)"},
		{[]string{"latency", path, "rx", "rx_ret"}, ""},
		{[]string{"latency", path, "rx_ret", "tx_ret"}, ""},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != exitOK || strings.Contains(errb.String(), "swapped") != (c.note != "") || !strings.Contains(errb.String(), c.note) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and %q", c.args[2:], code, errb.String(), c.note)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"requests", path, "rx", "arg2", "rx", "arg2"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "the item and end probes are both rx") {
		t.Errorf("requests with one probe: exit %d, %q", code, errb.String())
	}
}

// TestSplitShort: a one-letter flag takes its value run together with it,
// as head -n1 and perf -F99 do, where no flag has the whole name.
func TestSplitShort(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Uint64("n", 0, "")
	fs.Bool("v", false, "")
	fs.String("pid", "", "")
	fs.String("title", "", "")
	fs.String("o", "", "")
	got := splitShort(fs, []string{"-n1", "-vx", "-pid=3", "-pid", "4", "-7", "--n", "2", "-offcpu", "--title", "-o5", "-n", "-n3", "--", "-n5"})
	want := []string{"-n", "1", "-vx", "-pid=3", "-pid", "4", "-7", "--n", "2", "-offcpu", "--title", "-o5", "-n", "-n3", "--", "-n5"}
	if !slices.Equal(got, want) {
		t.Errorf("splitShort: %q, want %q", got, want)
	}
}

// TestEmptyCaptureNotes: count and latency of a capture without events
// say so, as hist does, rather than print a bare header.
func TestEmptyCaptureNotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.arrow")
	w, err := format.Create(path, &format.Meta{Host: "h", Probes: []format.Probe{{Name: "f"}, {Name: "f:return"}}}, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"count", path}, ": no events."},
		{[]string{"count", path, "f*"}, ": no events of the probes counted."},
		{[]string{"latency", path, "f"}, ": no call of f returned (f:return): the histogram is empty."},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != exitOK || !strings.Contains(errb.String(), "NOTE: "+path+tc.want) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, errb.String())
		}
	}
}
