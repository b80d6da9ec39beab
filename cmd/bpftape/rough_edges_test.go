package main

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// roughCapture writes a small capture of the formattest stream.
func roughCapture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.arrow")
	if err := formattest.WriteFile(path, 2000, nil, format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExportFormatFromExtension: without --format, export writes the
// format the -o file's extension names (Parquet with --partition); an
// explicit --format wins, with a warning when the extension disagrees;
// an extension that names no format, or no -o at all, is a usage error.
func TestExportFormatFromExtension(t *testing.T) {
	in := roughCapture(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, magic string
	}{
		{"x.parquet", "PAR1"},
		{"X.PARQUET", "PAR1"},
		{"x.csv", "time,cpu,pid,tid,comm,probe,"},
		{"x.jsonl", "{"},
		{"x.ndjson", "{"},
		{"x.arrow", "ARROW1"},
		{"x.feather", "ARROW1"},
	} {
		out := filepath.Join(dir, tc.name)
		if _, errOut, code := runCLI(t, "export", in, "-o", out); code != exitOK {
			t.Errorf("-o %s: exit %d: %s", tc.name, code, errOut)
			continue
		}
		if b := readAll(t, out); !bytes.HasPrefix(b, []byte(tc.magic)) {
			t.Errorf("-o %s starts with %q, want %q", tc.name, b[:min(len(b), 16)], tc.magic)
		}
	}

	out := filepath.Join(dir, "forced.parquet")
	_, errOut, code := runCLI(t, "export", in, "-f", "csv", "-o", out)
	if code != exitOK || !strings.Contains(errOut, "WARNING") || !strings.Contains(errOut, "--format") {
		t.Errorf("-f csv -o .parquet: exit %d, stderr %q: want csv written with a warning", code, errOut)
	}
	if b := readAll(t, out); !bytes.HasPrefix(b, []byte("time,")) {
		t.Errorf("-f csv -o .parquet wrote %q, want CSV", b[:min(len(b), 16)])
	}
	if _, errOut, _ := runCLI(t, "export", in, "-f", "ndjson", "-o", filepath.Join(dir, "same.jsonl")); strings.Contains(errOut, "WARNING") {
		t.Errorf("-f ndjson -o .jsonl warned: %q", errOut)
	}

	fleet := filepath.Join(dir, "fleet")
	if _, errOut, code := runCLI(t, "export", in, "--partition", "-o", fleet); code != exitOK {
		t.Errorf("--partition without --format: exit %d: %s", code, errOut)
	} else if parts, _ := filepath.Glob(filepath.Join(fleet, "*", "*", "*.parquet")); len(parts) == 0 {
		t.Errorf("--partition without --format wrote no Parquet file under %s", fleet)
	}

	for _, args := range [][]string{
		{"export", in},
		{"export", in, "-o", "-"},
		{"export", in, "-o", filepath.Join(dir, "x.txt")},
		{"export", in, "-o", filepath.Join(dir, "x.json")},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "--format is required") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want %d and one line asking for --format", args[1:], code, errOut, exitUsage)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("a refused export left its output behind")
	}

	help, _, _ := runCLI(t, "export", "--help")
	if !strings.Contains(help, "bpftape export cap.arrow -o cap.parquet ") {
		t.Errorf("export --help has no example of the format taken from the extension:\n%s", help)
	}
}

// The in-process tests give the verbs buffers as standard output, whatever
// the test binary's own standard output is (a terminal under go test run
// from one): report must not take them for a terminal.
func init() { stdoutIsTerminal = func() bool { return false } }

// TestReportToTerminal: report refuses to write its HTML to a terminal
// when no -o is given, with a one-line usage error suggesting -o; to a
// file or a pipe (or with -o) it writes the page.
func TestReportToTerminal(t *testing.T) {
	for _, tc := range []struct {
		toStdout, terminal, refused bool
	}{
		{true, true, true},
		{true, false, false},
		{false, true, false},
		{false, false, false},
	} {
		if err := htmlToTerminal(tc.toStdout, tc.terminal); (err != nil) != tc.refused {
			t.Errorf("htmlToTerminal(stdout %v, terminal %v) = %v, want refused %v", tc.toStdout, tc.terminal, err, tc.refused)
		}
	}

	in := roughCapture(t)
	defer func(f func() bool) { stdoutIsTerminal = f }(stdoutIsTerminal)
	stdoutIsTerminal = func() bool { return true }
	stdout, errOut, code := runCLI(t, "report", in)
	if code != exitUsage || stdout != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "-o report.html") {
		t.Errorf("report to a terminal: exit %d, %d bytes out, stderr %q; want %d, nothing, one line suggesting -o report.html", code, len(stdout), errOut, exitUsage)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	if _, errOut, code := runCLI(t, "report", in, "-o", out); code != exitOK || !bytes.Contains(readAll(t, out), []byte("<html")) {
		t.Errorf("report -o with a terminal: exit %d: %s", code, errOut)
	}
	stdoutIsTerminal = func() bool { return false }
	if stdout, errOut, code := runCLI(t, "report", in); code != exitOK || !strings.Contains(stdout, "<html") {
		t.Errorf("report to a pipe: exit %d, %d bytes: %s", code, len(stdout), errOut)
	}

	help, _, _ := runCLI(t, "report", "--help")
	if !strings.Contains(help, "bpftape report cap.arrow > report.html") {
		t.Errorf("report --help has no example of a redirected page:\n%s", help)
	}
}

// TestExportBinaryToTerminal: export refuses to write a binary format to
// a terminal without -o, in one line; CSV and JSON lines are text and go.
func TestExportBinaryToTerminal(t *testing.T) {
	in := roughCapture(t)
	defer func(f func() bool) { stdoutIsTerminal = f }(stdoutIsTerminal)
	stdoutIsTerminal = func() bool { return true }
	for _, f := range []string{"parquet", "arrow", "pprof", "perfetto"} {
		stdout, errOut, code := runCLI(t, "export", in, "-f", f)
		if code != exitUsage || stdout != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "to a terminal") {
			t.Errorf("export -f %s to a terminal: exit %d, %d bytes out, stderr %q; want %d, nothing, one line", f, code, len(stdout), errOut, exitUsage)
		}
	}
	for _, f := range []string{"csv", "jsonl"} {
		if stdout, errOut, code := runCLI(t, "export", in, "-f", f); code != exitOK || stdout == "" {
			t.Errorf("export -f %s to a terminal: exit %d, %d bytes: %s", f, code, len(stdout), errOut)
		}
	}
}

// writePairCapture writes calls of f (entry f, return f:return, as record
// names them without NAME=) and of g (entry g, return g_ret) on three
// threads. Each entry of f has its call's duration in microseconds as
// arg0, and the probe tick holds one number and one string field: the
// histogram of f.arg0 is that of the latencies of f in usecs.
func writePairCapture(t *testing.T, path string) {
	t.Helper()
	const start = int64(5_000_000_000)
	m := &format.Meta{
		Tool: "bpftape test", Host: "h", Kernel: "6.1.0-test",
		StartWall: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), StartBoot: start,
		Probes: []format.Probe{
			{Name: "f", Kind: "uprobe", Spec: "u:/bin/app:f(arg0)", Target: "/bin/app",
				Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}},
			{Name: "f:return", Kind: "uretprobe", Spec: "ur:/bin/app:f", Target: "/bin/app",
				Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
			{Name: "g", Kind: "uprobe", Spec: "g=u:/bin/app:g", Target: "/bin/app"},
			{Name: "g_ret", Kind: "uretprobe", Spec: "g_ret=ur:/bin/app:g", Target: "/bin/app"},
			{Name: "tick", Kind: "usdt", Spec: "usdt:/bin/app:app:tick(arg0,str(arg1))", Target: "/bin/app",
				Fields: []format.Field{{Name: "n", Type: format.Int64}, {Name: "what", Type: format.String}}},
		},
	}
	rng := rand.New(rand.NewSource(3))
	var evs []format.Event
	for _, tid := range []uint32{21, 22, 23} {
		ts := start + int64(tid)*1000
		for range 300 {
			d := 1000 + rng.Int63n(3_000_000) // 1 µs to 3 ms
			if rng.Intn(10) == 0 {
				d = rng.Int63n(1000) // under 1 µs: bucket [0]
			}
			evs = append(evs,
				format.Event{Time: ts, PID: 20, TID: tid, Comm: []byte("app"), Probe: 0, Ints: []uint64{uint64(d / 1000)}},
				format.Event{Time: ts + d, PID: 20, TID: tid, Comm: []byte("app"), Probe: 1, Ints: []uint64{0}},
				format.Event{Time: ts + d + 100, PID: 20, TID: tid, Comm: []byte("app"), Probe: 2},
				format.Event{Time: ts + d + 200, PID: 20, TID: tid, Comm: []byte("app"), Probe: 3},
				format.Event{Time: ts + d + 300, PID: 20, TID: tid, Comm: []byte("app"), Probe: 4, Ints: []uint64{uint64(rng.Intn(100)), 0}, Strs: [][]byte{nil, []byte("x")}})
			ts += d + 1000 + rng.Int63n(100_000)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time < evs[j].Time })
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		if err := w.Append(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLatencyOneProbe: latency with one probe f pairs f with f:return
// (and f:return alone with f), printing what the two-probe form prints;
// without such a pair, a one-line usage error names the probes that pair,
// or else the return probes.
func TestLatencyOneProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pairs.arrow")
	writePairCapture(t, path)
	want, errOut, code := runCLI(t, "latency", path, "f", "f:return", "-u")
	if code != exitOK || !strings.Contains(want, "count: 900") {
		t.Fatalf("latency f f:return: exit %d: %s\n%s", code, errOut, want)
	}
	for _, args := range [][]string{
		{"latency", path, "f", "-u"},
		{"latency", "-u", path, "f:return"},
	} {
		if got, errOut, code := runCLI(t, args...); code != exitOK || got != want {
			t.Errorf("%q: exit %d: %s\n%s\nwant\n%s", args[1:], code, errOut, got, want)
		}
	}

	in := roughCapture(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{path, "g"}, []string{`"g:return"`, `"g"`, "ENTRY_PROBE RETURN_PROBE", "pair with their :return: f"}},
		{[]string{path, "g_ret"}, []string{`"g_ret:return"`, ": f"}},
		{[]string{path, "nosuch"}, []string{`no probe "nosuch"`, ": f"}},
		{[]string{in, "rx"}, []string{`"rx:return"`, "return probes: rx_ret, tx_ret"}},
		{[]string{in, "rx:return"}, []string{`no probe "rx:return"`, "rx_ret, tx_ret"}},
	} {
		_, errOut, code := runCLI(t, append([]string{"latency"}, tc.args...)...)
		ok := code == exitUsage && strings.Count(errOut, "\n") == 1
		for _, w := range tc.want {
			ok = ok && strings.Contains(errOut, w)
		}
		if !ok {
			t.Errorf("latency %s: exit %d, %q; want %d and one line with %q", tc.args[1], code, errOut, exitUsage, tc.want)
		}
	}
	if _, errOut, code := runCLI(t, "latency", in); code != exitUsage || !strings.Contains(errOut, "want FILE ENTRY_PROBE [RETURN_PROBE]") {
		t.Errorf("latency FILE: exit %d, %q", code, errOut)
	}

	// heatmap --latency and report --latency take one probe as latency
	// does; report answers a question asked twice once.
	for _, tc := range []struct{ one, two []string }{
		{[]string{"heatmap", path, "--latency", "f"}, []string{"heatmap", path, "--latency", "f", "f:return"}},
		{[]string{"heatmap", path, "--latency", "f:return"}, []string{"heatmap", path, "--latency", "f", "f:return"}},
		{[]string{"report", path, "--pairs", "0", "--latency", "f", "--latency", "f,f:return"}, []string{"report", path, "--pairs", "0", "--latency", "f f:return"}},
	} {
		one, errOut, code := runCLI(t, tc.one...)
		two, errOut2, code2 := runCLI(t, tc.two...)
		if code != exitOK || code2 != exitOK || one != two || len(one) < 1000 {
			t.Errorf("%q: exit %d (%s), %d bytes; %q: exit %d (%s), %d bytes; want the same output", tc.one, code, errOut, len(one), tc.two, code2, errOut2, len(two))
		}
	}
	if _, errOut, code := runCLI(t, "report", path, "--latency", "g"); code != exitUsage || !strings.Contains(errOut, `--latency: no probe "g:return"`) {
		t.Errorf("report --latency g: exit %d, %q", code, errOut)
	}

	help, _, _ := runCLI(t, "latency", "--help")
	if !strings.Contains(help, "bpftape latency cap.arrow vfs_read -u ") {
		t.Errorf("latency --help has no one-probe example:\n%s", help)
	}
}

// TestHistImpliedField: hist without FIELD counts the probe's one integer
// field (besides the --by field), printing what naming it prints, whose
// label and JSON val_type name it; a probe with several integer fields, or
// none, is a one-line usage error that lists its fields.
func TestHistImpliedField(t *testing.T) {
	dir := t.TempDir()
	pairs := filepath.Join(dir, "pairs.arrow")
	writePairCapture(t, pairs)
	stable := filepath.Join(dir, "stable.arrow")
	writeStableCapture(t, stable)
	for _, tc := range []struct{ implied, named []string }{
		{[]string{"hist", pairs, "f"}, []string{"hist", pairs, "f", "arg0"}},
		{[]string{"hist", pairs, "f", "--style", "bpftrace"}, []string{"hist", pairs, "f", "arg0", "--style", "bpftrace"}},
		{[]string{"hist", "--json", pairs, "f"}, []string{"hist", "--json", pairs, "f", "arg0"}},
		{[]string{"hist", pairs, "tick"}, []string{"hist", pairs, "tick", "n"}}, // and a string field
		{[]string{"hist", stable, "req", "--by", "id"}, []string{"hist", stable, "req", "len", "--by", "id"}},
	} {
		want, errWant, code := runCLI(t, tc.named...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", tc.named[1:], code, errWant)
		}
		got, errOut, code := runCLI(t, tc.implied...)
		if code != exitOK || got != want || errOut != errWant {
			t.Errorf("%q: exit %d, stderr %q\n%s\nwant, as %q prints,\n%s", tc.implied[1:], code, errOut, got, tc.named[1:], want)
		}
	}
	js, _, _ := runCLI(t, "hist", pairs, "f", "--json")
	if !strings.Contains(js, `"val_type": "arg0"`) {
		t.Errorf("hist --json without FIELD does not name the field:\n%s", js)
	}
	if _, errOut, code := runCLI(t, "hist", pairs, "f", "--label", "usecs"); code != exitOK || !strings.Contains(errOut, "arg0") {
		t.Errorf("hist --label without FIELD: exit %d, stderr %q: want a note naming arg0", code, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{stable, "req"}, "give FIELD, one of id, len"},
		{[]string{pairs, "g"}, "probe g has no fields"},
		{[]string{pairs, "nosuch"}, `no probe "nosuch"`},
	} {
		_, errOut, code := runCLI(t, append([]string{"hist"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("hist %s: exit %d, %q; want %d and one line with %q", tc.args[1], code, errOut, exitUsage, tc.want)
		}
	}

	help, _, _ := runCLI(t, "hist", "--help")
	if !strings.Contains(help, "bpftape hist cap.arrow rx ") || !strings.Contains(help, "FILE PROBE [FIELD]") {
		t.Errorf("hist --help has no example without FIELD:\n%s", help)
	}
}

// TestLatencyBpftraceStyle: latency --style bpftrace prints its histogram
// byte for byte as hist --style bpftrace prints the same values (here
// arg0 of f, each call's duration in microseconds), keyed or not and for
// an older bpftrace too, with the summary lines after it; --json is the
// same in both styles.
func TestLatencyBpftraceStyle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pairs.arrow")
	writePairCapture(t, path)
	for _, extra := range [][]string{
		nil,
		{"--by", "tid"},
		{"--bpftrace-version", "0.19"},
	} {
		lat, errOut, code := runCLI(t, append([]string{"latency", path, "f", "-u", "--style", "bpftrace"}, extra...)...)
		if code != exitOK {
			t.Fatalf("latency --style bpftrace %q: exit %d: %s", extra, code, errOut)
		}
		h, errOut, code := runCLI(t, append([]string{"hist", path, "f", "arg0", "--label", "usecs", "--style", "bpftrace"}, extra...)...)
		if code != exitOK || !strings.HasPrefix(h, "@usecs") {
			t.Fatalf("hist --style bpftrace %q: exit %d: %s\n%s", extra, code, errOut, h)
		}
		summary, ok := strings.CutPrefix(lat, h)
		if !ok || !strings.HasPrefix(summary, "avg = ") || !strings.Contains(summary, "count: 900\n") || !strings.Contains(summary, "\nunmatched: ") {
			t.Errorf("latency --style bpftrace %q:\n%s\nwant hist --style bpftrace's\n%s\nthen the summary", extra, lat, h)
		}
	}
	bcc, _, _ := runCLI(t, "latency", path, "f", "-u", "--json")
	bt, _, _ := runCLI(t, "latency", path, "f", "-u", "--json", "--style", "bpftrace")
	if bcc != bt || bcc == "" {
		t.Errorf("latency --json depends on --style:\n%s\n%s", bcc, bt)
	}
	if _, errOut, code := runCLI(t, "latency", path, "f", "--style", "dtrace"); code != exitUsage || strings.Count(errOut, "\n") != 1 {
		t.Errorf("--style dtrace: exit %d, %q", code, errOut)
	}

	help, _, _ := runCLI(t, "latency", "--help")
	if !strings.Contains(help, "bpftape latency cap.arrow vfs_read -u --style bpftrace") {
		t.Errorf("latency --help has no --style bpftrace example:\n%s", help)
	}
}
