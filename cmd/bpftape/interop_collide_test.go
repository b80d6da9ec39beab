//go:build interop

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCollidingFieldsReadAlike records two USDT probes whose fields have
// the same names and different types (test:sizes' arg0..arg3 are int8,
// uint8, int16 and uint16; test:mixed's are int64, int32, a string and an
// int32), and reads every field back with bpftape events, with polars from
// the capture and with DuckDB from its Parquet export: each must give the
// values the workload printed. In format version 1 the second probe's
// fields were renamed "mx.arg0"... while the first's kept "arg0", so the
// obvious query on one probe depended on which other probes were recorded.
func TestCollidingFieldsReadAlike(t *testing.T) {
	bin, probes := bpftapeBin(t)
	node, interop := interopNode(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.arrow")
	const n = 60
	r := runBin(t, exec.Command(bin, "record", "-o", out, "-c", fmt.Sprintf("%s sizes %d", probes, n),
		"sz=U:"+probes+":test:sizes", "mx=U:"+probes+":test:mixed(arg0,arg1,str(arg2),arg3)"))
	if r.code != 0 {
		t.Fatalf("record: exit %d", r.code)
	}

	// The workload's ground truth: "sizes I A0..A7" and "mixed I A B NAME 42".
	truth := map[string][]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		f := strings.Split(l, " ")
		switch {
		case f[0] == "sizes" && len(f) == 10:
			for k := 0; k < 8; k++ {
				col := fmt.Sprintf("sz.arg%d", k)
				truth[col] = append(truth[col], f[2+k])
			}
		case f[0] == "mixed" && len(f) == 6:
			for k, v := range f[2:] {
				col := fmt.Sprintf("mx.arg%d", k)
				truth[col] = append(truth[col], v)
			}
		}
	}
	if len(truth["sz.arg0"]) != n || len(truth["mx.arg0"]) != n {
		t.Fatalf("workload printed %d sizes and %d mixed lines, want %d", len(truth["sz.arg0"]), len(truth["mx.arg0"]), n)
	}

	// bpftape events: "PID TID COMM FUNC arg0=V arg1=V ...", strings quoted.
	evOut, errOut, code := runCLI(t, "events", out, "--time", "none")
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, errOut)
	}
	events := map[string][]string{}
	for _, l := range strings.Split(evOut, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		for _, kv := range f[4:] {
			k, v, _ := strings.Cut(kv, "=")
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			events[f[3]+"."+k] = append(events[f[3]+"."+k], v)
		}
	}

	pq := filepath.Join(dir, "c.parquet")
	if _, errOut, code := runCLI(t, "export", out, "--format", "parquet", "-o", pq); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	var args []string
	for col := range truth {
		args = append(args, "--values="+col)
	}
	pol := runReader(t, node, filepath.Join(interop, "read.js"), append([]string{out}, args...)...)
	duck := runReader(t, node, filepath.Join(interop, "duckdb.js"), append([]string{pq}, args...)...)

	for col, want := range truth {
		for name, got := range map[string][]string{"bpftape events": events[col], "polars": pol.Values[col], "duckdb": duck.Values[col]} {
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: %s reads %q, the workload printed %q", col, name, got, want)
			}
		}
	}
	// The columns keep each probe's own type.
	for col, want := range map[string][2]string{
		"sz.arg0": {"Int8", "TINYINT"}, "sz.arg1": {"UInt8", "UTINYINT"}, "sz.arg2": {"Int16", "SMALLINT"},
		"mx.arg0": {"Int64", "BIGINT"}, "mx.arg1": {"Int32", "INTEGER"}, "mx.arg2": {"String", "VARCHAR"},
	} {
		if pol.Dtypes[col] != want[0] || duck.Columns[col] != want[1] {
			t.Errorf("%s: polars %s, duckdb %s; want %s, %s", col, pol.Dtypes[col], duck.Columns[col], want[0], want[1])
		}
	}
}
