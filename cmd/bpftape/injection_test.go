//go:build linux && amd64

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

// TestInjection reads a capture whose command names, string field, probe
// name, host and command line hold terminal escapes, forged lines, formulas
// and bytes that are not UTF-8. Text verbs print them escaped (no control
// byte reaches the terminal, no line is forged), the SVG is well-formed
// XML, the HTML holds no control byte, and CSV neutralises formulas
// unless --csv-formulas (TestInjectionDuckDB, built with -tags interop,
// opens the Parquet export in DuckDB). Before, a comm of "\nforged line"
// forged a line of events and info, and ESC]0;...BEL retitled the
// terminal.
func TestInjection(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "injection.arrow")
	if err := hostile.Named("injection").Write(path); err != nil {
		t.Fatal(err)
	}
	clean := func(what string, b []byte, lines bool) {
		t.Helper()
		for _, c := range b {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Errorf("%s: control byte %#x in:\n%s", what, c, b)
				return
			}
		}
		for _, l := range strings.Split(string(b), "\n") {
			if lines && strings.HasPrefix(l, "forged") {
				t.Errorf("%s: forged line %q", what, l)
			}
		}
	}
	for _, args := range [][]string{
		{"info", path},
		{"events", path},
		{"events", path, "-f", `req "%s", name`},
		{"hist", path, "req", "arg0", "--by", "comm"},
		{"hist", path, "req", "arg0", "--by", "comm", "--style", "bpftrace"},
		{"hist", path, "req", "arg0", "--by", "name"},
		{"latency", path, "req", "req_ret"},
		{"requests", path, "req", "arg0", "req_ret", "retval"},
		{"compare", path, "req", "arg0", "req_ret", "retval"},
		{"hist", path, "nosuchprobe", "arg0"}, // the error lists the probes
	} {
		r := runBin(t, exec.Command(bin, args...))
		if r.code > exitUsage {
			t.Errorf("%v: exit %d", args, r.code)
		}
		clean(args[0]+" stdout", []byte(r.stdout), true)
		clean(args[0]+" stderr", []byte(r.stderr), true)
	}

	svg, html := filepath.Join(dir, "i.svg"), filepath.Join(dir, "i.html")
	for _, args := range [][]string{{"heatmap", path, "req", "arg0", "-o", svg}, {"report", path, "-o", html}} {
		if r := runBin(t, exec.Command(bin, args...)); r.code != exitOK {
			t.Fatalf("%v: exit %d", args, r.code)
		}
	}
	b, _ := os.ReadFile(svg)
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
	b, _ = os.ReadFile(html)
	clean("report", b, false) // a newline in HTML text is a space
	if !strings.Contains(string(b), `evil\x1b[31m`) {
		t.Errorf("the report does not show the escaped probe name")
	}

	for _, formulas := range []bool{false, true} {
		out := filepath.Join(dir, "x.csv")
		args := []string{"export", path, "--format", "csv", "-o", out, "--force"}
		if formulas {
			args = append(args, "--csv-formulas")
		}
		if r := runBin(t, exec.Command(bin, args...)); r.code != exitOK {
			t.Fatalf("%v: exit %d", args, r.code)
		}
		f, _ := os.Open(out)
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs[1:] {
			for _, cell := range []string{rec[4], rec[7]} { // comm, name
				if strings.Contains(cell, "\xff") {
					t.Errorf("invalid UTF-8 in CSV cell %q", cell)
				}
				if cell == "" {
					continue
				}
				risky := strings.ContainsRune("=+-@\t\r", rune(cell[0]))
				if !formulas && risky {
					t.Errorf("CSV cell %q would run as a formula", cell)
				}
				if formulas && strings.HasPrefix(cell, "'") {
					t.Errorf("--csv-formulas: cell %q was changed", cell)
				}
			}
		}
	}
}
