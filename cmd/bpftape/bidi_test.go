package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil/hostile"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// TestBidi reads a capture whose command names, string field, host, probe
// name and stack symbols hold U+202E (RIGHT-TO-LEFT OVERRIDE), U+2066,
// U+200B and U+FEFF. No output holds any of them, or any other invisible
// format character, raw: terminal text (events, hist --by comm, stacks,
// ...), JSON (--json, which encoding/json writes), CSV, JSON lines, the
// flame graph and heat map SVGs and the HTML report. Text shows them as
// textsafe escapes them (\u202e), and JSON lines keep them as JSON escapes
// of the same strings.
func TestBidi(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bidi.arrow")
	if err := hostile.WriteBidi(path); err != nil {
		t.Fatal(err)
	}
	// none reports an invisible character in b, and the escape of the
	// override missing from it when shown says it should be there.
	none := func(what string, b []byte, shown string) {
		t.Helper()
		for _, r := range hostile.Bidi {
			if bytes.ContainsRune(b, r) {
				t.Errorf("%s: raw %U in:\n%s", what, r, b)
			}
		}
		for _, r := range string(b) {
			if textsafe.Invisible(r) {
				t.Errorf("%s: raw %U", what, r)
				break
			}
		}
		if shown != "" && !bytes.Contains(b, []byte(shown)) {
			t.Errorf("%s: no %s in:\n%s", what, shown, b)
		}
	}
	const esc = `\u202e`
	for _, tc := range []struct {
		args  []string
		shown string // what stdout shows of a name, "" for nothing
	}{
		{[]string{"info", path}, `host\u202e\u2066\u200b\ufeff`},
		{[]string{"info", "--json", path}, esc},
		{[]string{"events", path}, `\u202egnp.exe\u200b`},
		{[]string{"events", path, "-f", `req "%s", name`}, `a\u202e\u2066\u200b\ufeff`},
		{[]string{"hist", path, "req", "arg0", "--by", "comm"}, `\u2066sshd\ufeff`},
		{[]string{"hist", path, "req", "arg0", "--by", "comm", "--style", "bpftrace"}, `\u2066sshd\ufeff`},
		{[]string{"hist", path, "req", "arg0", "--by", "name"}, esc},
		{[]string{"hist", path, "req", "arg0", "--by", "comm", "--json"}, esc},
		{[]string{"count", path, "--by", "comm"}, esc},
		{[]string{"count", path, "--by", "comm", "--json"}, esc},
		{[]string{"latency", path, "req", "req_ret", "--by", "comm"}, esc},
		{[]string{"latency", path, "req", "req_ret", "--json"}, ""},
		{[]string{"requests", path, "req", "arg0", "req_ret", "retval"}, ""},
		{[]string{"compare", path, "req", "arg0", "req_ret", "retval"}, ""},
		{[]string{"stacks", path, "req"}, `leaf_\u202egnp.exe\u200b`},
		{[]string{"stacks", "--text", path, "req"}, `main\u200ba\u202e\u2066\u200b\ufeff`},
		{[]string{"stacks", "--by", "comm", path, "req"}, esc},
		{[]string{"stacks", "--kernel", path, "req"}, `vfs_\u202edaer`},
		{[]string{"hist", path, "nosuchprobe", "arg0"}, ""}, // the error lists the probes
		{[]string{"events", path, "--comm", "\u202e"}, ""},  // the note lists the comms
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		if code > exitUsage {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
		}
		name := strings.Join(tc.args[:1], " ")
		none(name+" stdout", []byte(stdout), tc.shown)
		none(name+" stderr", []byte(stderr), "")
		if slices.Contains(tc.args, "--json") {
			// One document, or one per line (hist --by).
			d := json.NewDecoder(strings.NewReader(stdout))
			for d.More() {
				var v any
				if err := d.Decode(&v); err != nil {
					t.Errorf("%v: invalid JSON: %v\n%s", tc.args, err, stdout)
					break
				}
			}
		}
	}

	out := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		args  []string
		file  string
		shown string
	}{
		{[]string{"export", path, "--format", "csv", "-o", out("x.csv")}, "x.csv", `\u202egnp.exe\u200b`},
		{[]string{"export", path, "--format", "jsonl", "-o", out("x.jsonl")}, "x.jsonl", esc},
		{[]string{"flamegraph", path, "req", "-o", out("flame.svg")}, "flame.svg", `leaf_\u202egnp.exe`},
		{[]string{"flamegraph", path, "req", "--kernel", "--by", "comm", "--title", "t\u202e", "-o", out("kflame.svg")}, "kflame.svg", `vfs_\u202edaer`},
		{[]string{"heatmap", path, "req", "arg0", "-o", out("heat.svg")}, "heat.svg", ""},
		{[]string{"report", path, "-o", out("report.html"), "--latency", "req req_ret"}, "report.html", `host\u202e\u2066\u200b\ufeff`},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != exitOK {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
			continue
		}
		none(tc.args[0]+" stdout", []byte(stdout), "")
		none(tc.args[0]+" stderr", []byte(stderr), "")
		b, err := os.ReadFile(out(tc.file))
		if err != nil {
			t.Fatal(err)
		}
		none(tc.file, b, tc.shown)
	}

	// The SVG and HTML to standard output too.
	for _, tc := range []struct {
		args  []string
		shown string
	}{
		{[]string{"flamegraph", path, "req"}, esc},
		{[]string{"report", path}, esc},
		{[]string{"heatmap", path, "req", "arg0"}, ""},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != exitOK {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
		}
		none(tc.args[0]+" to stdout", []byte(stdout), tc.shown)
	}

	// CSV: the cells show the escapes; JSON lines: the same strings as
	// the capture's, escaped.
	f, err := os.Open(out("x.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSV: %d records, %v", len(recs), err)
	}
	comms := map[string]bool{}
	for _, rec := range recs[1:] {
		comms[rec[slices.Index(recs[0], "comm")]] = true
	}
	for _, s := range hostile.BidiStrings {
		if !comms[textsafe.Escape(s)] {
			t.Errorf("CSV: no comm %q among %v", textsafe.Escape(s), comms)
		}
	}
	f, err = os.Open(out("x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("JSON lines: %v: %s", err, sc.Bytes())
		}
		if c, ok := row["comm"].(string); ok {
			seen[c] = true
		}
		if n, ok := row["name"].(string); ok {
			seen[n] = true
		}
	}
	for _, s := range hostile.BidiStrings {
		if !seen[s] {
			t.Errorf("JSON lines: no comm or name %q", s)
		}
	}
}
