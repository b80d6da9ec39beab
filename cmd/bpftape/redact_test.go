package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay/export"
)

// redactInput writes a capture full of private strings — comm names,
// string fields (a uprobe's str(arg0), a tracepoint's filename), a host
// name, the recorder's and the traced command's command lines, binary and
// debug-file paths, free-form facts — and integer fields and loss records
// to keep. It returns the path, every private string it holds (values,
// not tokens: each must be absent from a redacted export) and the number
// of events per probe.
func redactInput(t *testing.T, dir string) (path string, secrets []string, perProbe map[string]uint64, lost uint64) {
	t.Helper()
	const bin = "/home/alice-q7/sekrit-project/bin/srv"
	m := &format.Meta{
		Tool:   "bpftape test",
		Host:   "sekrithost-q7.corp.example",
		Kernel: "6.18.0-test",
		CommandLine: []string{"bpftape", "record", "-o", "/home/alice-q7/caps/c.arrow", "-c", bin + " --password hunter2-q7",
			"open=u:" + bin + ":open_file(str(arg0),arg1)"},
		StartWall: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		StartBoot: 1_000_000_000,
		Probes: []format.Probe{
			{Name: "open", Kind: "uprobe", Spec: "open=u:" + bin + ":open_file(str(arg0),arg1)", Target: bin, BuildID: "0123abcd",
				Fields: []format.Field{{Name: "arg0", Type: format.String}, {Name: "arg1", Type: format.Int64}}},
			{Name: "open_ret", Kind: "uretprobe", Spec: "open_ret=ur:" + bin + ":open_file(retval:s32)", Target: bin, BuildID: "0123abcd",
				Fields: []format.Field{{Name: "retval", Type: format.Int32}}},
			{Name: "openat", Kind: "tracepoint", Spec: "openat=t:syscalls:sys_enter_openat(filename,flags)",
				Fields: []format.Field{{Name: "filename", Type: format.String}, {Name: "flags", Type: format.Uint64}}},
		},
		Extra: map[string]string{
			"command":         bin + " --password hunter2-q7",
			"comm":            "srvcomm-q7",
			"pid":             "4242",
			"ring_size":       "4194304",
			"debug_file:open": "/usr/lib/debug/.build-id/01/sekrit-debugfile-q7.debug",
			"note":            "ticket for customer sekrit-customer-q7",
		},
	}
	secrets = []string{m.Host, "sekrithost", "hunter2-q7", "alice-q7", "sekrit-project", "/home/", "srvcomm-q7",
		"sekrit-debugfile-q7", "sekrit-customer-q7", "/caps/c.arrow"}
	path = filepath.Join(dir, "private.arrow")
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	comms := []string{"wrkr-sekrit-a", "wrkr-sekrit-b", "db-pool-q7", "ssh-alice-q7"}
	secrets = append(secrets, comms...)
	perProbe = map[string]uint64{}
	for i := 0; i < 500; i++ {
		tm := m.StartBoot + int64(i)*1_000_000
		comm := []byte(comms[i%len(comms)])
		pid := uint32(4242 + i%3)
		switch i % 3 {
		case 0:
			s := fmt.Sprintf("/srv/sekrit-data-q7/file-%03d.txt", i)
			secrets = append(secrets, s)
			err = w.Append(&format.Event{Time: tm, CPU: uint16(i % 2), PID: pid, TID: pid + 1, Comm: comm, Probe: 0,
				Ints: []uint64{0, uint64(i * 3)}, Strs: [][]byte{[]byte(s), nil}})
			perProbe["open"]++
		case 1:
			err = w.Append(&format.Event{Time: tm, CPU: uint16(i % 2), PID: pid, TID: pid + 1, Comm: comm, Probe: 1,
				Ints: []uint64{uint64(1 << (i % 20))}, Strs: [][]byte{nil}})
			perProbe["open_ret"]++
		default:
			s := fmt.Sprintf("token=pw-hunter2-q7-%d", i)
			secrets = append(secrets, s)
			err = w.Append(&format.Event{Time: tm, CPU: uint16(i % 2), PID: pid, TID: pid, Comm: comm, Probe: 2,
				Ints: []uint64{0, uint64(i)}, Strs: [][]byte{[]byte(s), nil}})
			perProbe["openat"]++
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if err := w.Lost(uint16(i%3), 1, tm, uint64(i)); err != nil {
				t.Fatal(err)
			}
			lost += uint64(i)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, secrets, perProbe, lost
}

// checkClean fails for each secret found in text.
func checkClean(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds private string %q", what, s)
		}
	}
}

// checkRawClean fails for each secret in the bytes of a file.
func checkRawClean(t *testing.T, path string, secrets []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s: the file's bytes hold private string %q", filepath.Base(path), s)
		}
	}
}

// captureValues reads a capture back (decompressed) and returns its
// metadata as JSON and every value of every row, comm, probe and field
// columns, as text.
func captureValues(t *testing.T, path string) (meta *format.Meta, text string, perProbe map[string]uint64, lost uint64) {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer r.Close()
	if r.Recovered {
		t.Errorf("%s has no footer", path)
	}
	var sb strings.Builder
	md := r.Schema.Metadata()
	for i, k := range md.Keys() {
		v := md.Values()[i]
		if k == format.MetadataKey {
			// The metadata as read: without the footer's counts of
			// batches and bytes, which differ between equal captures
			// written in batches of other sizes.
			b, err := json.Marshal(r.Meta)
			if err != nil {
				t.Fatal(err)
			}
			v = string(b)
		}
		sb.WriteString(k + "=" + v + "\n")
	}
	for _, f := range r.Schema.Fields() {
		sb.WriteString(f.Name + "\n")
	}
	perProbe = map[string]uint64{}
	names := r.Meta.ProbeNames()
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			sb.WriteString(b.Comm(i) + "\t" + names[b.Probe[i]])
			for ci := format.ColLost + 1; ci < len(r.Schema.Fields()); ci++ {
				if c := b.Col(ci); c.Valid(i) {
					sb.WriteString("\t" + c.Str(i))
				}
			}
			sb.WriteByte('\n')
			if n, ok := b.Lost(i); ok {
				lost += n
			} else {
				perProbe[names[b.Probe[i]]]++
				if b.Comm(i) != "" && r.Meta.Extra[export.RedactedKey] != "" {
					t.Fatalf("%s: redacted, but event %d has comm %q", path, i, b.Comm(i))
				}
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return r.Meta, sb.String(), perProbe, lost
}

// parquetValues reads every value and the key-value metadata of a Parquet
// file back with pqarrow.
func parquetValues(t *testing.T, path string) (text string, cols []string, rows int64) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var sb strings.Builder
	kv := pf.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		sb.WriteString(k + "=" + kv.Values()[i] + "\n")
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for i := 0; i < int(tbl.NumCols()); i++ {
		col := tbl.Column(i)
		cols = append(cols, col.Name())
		for _, ch := range col.Data().Chunks() {
			for k := 0; k < ch.Len(); k++ {
				sb.WriteString(ch.ValueStr(k) + "\n")
			}
		}
	}
	md := tbl.Schema().Metadata()
	for i, k := range md.Keys() {
		sb.WriteString(k + "=" + md.Values()[i] + "\n")
	}
	return sb.String(), cols, tbl.NumRows()
}

// TestExportRedact exports a capture full of private strings with
// --redact to every format, uncompressed and compressed, and checks that
// no comm name, string field value, host name, command line or path of the
// input is in the output: in every value read back (decompressed), and in
// the raw bytes of the uncompressed files. The redacted capture must keep
// every event, integer value and loss record, open in bpftape info and
// hist (with the same histogram as the input) and in nodejs-polars
// (TestExportRedactPolars, built with -tags interop), and its metadata must
// say it was redacted and what was dropped.
func TestExportRedact(t *testing.T) {
	dir := t.TempDir()
	in, secrets, perProbe, lost := redactInput(t, dir)
	var events uint64
	for _, n := range perProbe {
		events += n
	}
	// The input does hold them (or the test would prove nothing).
	_, inText, _, _ := captureValues(t, in)
	for _, s := range secrets {
		if !strings.Contains(inText, s) {
			t.Fatalf("input capture lacks %q", s)
		}
	}

	for _, comp := range []string{"none", "zstd", "lz4"} {
		out := filepath.Join(dir, "redacted-"+comp+".arrow")
		_, errOut, code := runCLI(t, "export", in, "--format", "arrow", "--redact", "--compress", comp, "-o", out)
		if code != 0 {
			t.Fatalf("arrow %s: exit %d: %s", comp, code, errOut)
		}
		if !strings.Contains(errOut, "redacted") {
			t.Errorf("arrow %s: stderr %q does not say redacted", comp, errOut)
		}
		if comp == "none" {
			checkRawClean(t, out, secrets)
		}
		meta, text, gotPer, gotLost := captureValues(t, out)
		checkClean(t, "arrow "+comp+" (values read back)", text, secrets)
		if fmt.Sprint(gotPer) != fmt.Sprint(perProbe) || gotLost != lost {
			t.Errorf("arrow %s: %v events, %d lost; input %v, %d", comp, gotPer, gotLost, perProbe, lost)
		}
		if meta.Extra[export.RedactedKey] == "" || meta.Extra[export.RedactedFieldsKey] != "open.arg0,openat.filename" {
			t.Errorf("arrow %s: metadata extra %v does not say what was redacted", comp, meta.Extra)
		}
		if meta.Host != "" || len(meta.CommandLine) != 0 || meta.Extra["pid"] != "4242" || meta.Extra["ring_size"] != "4194304" {
			t.Errorf("arrow %s: meta host %q, command line %q, extra %v", comp, meta.Host, meta.CommandLine, meta.Extra)
		}
		if p := meta.Probes[0]; p.Target != "srv" || p.Spec != "open=u:srv:open_file(str(arg0),arg1)" || p.BuildID != "0123abcd" || len(p.Fields) != 1 {
			t.Errorf("arrow %s: probe open %+v", comp, p)
		}
	}
	red := filepath.Join(dir, "redacted-zstd.arrow")

	// bpftape opens it: info (which prints the redaction) and hist, which
	// prints what it printed for the input.
	info, errOut, code := runCLI(t, "info", red)
	if code != 0 || !strings.Contains(info, export.RedactedWhat) || !strings.Contains(info, "open.arg0,openat.filename") {
		t.Errorf("info: exit %d, stderr %q:\n%s", code, errOut, info)
	}
	checkClean(t, "bpftape info", info, secrets)
	for _, q := range [][]string{{"open_ret", "retval"}, {"open", "arg1"}, {"openat", "flags"}} {
		want, _, code1 := runCLI(t, "hist", in, q[0], q[1])
		got, errOut, code2 := runCLI(t, "hist", red, q[0], q[1])
		if code1 != 0 || code2 != 0 || got != want || !strings.Contains(got, "distribution") {
			t.Errorf("hist %s %s: exit %d/%d (%s); input:\n%s\nredacted:\n%s", q[0], q[1], code1, code2, errOut, want, got)
		}
	}
	if ij := infoJSON(t, red); ij.Events != events || ij.Losses.Total != lost ||
		!strings.Contains(ij.Captured, "command names removed") || strings.Contains(ij.Captured, "strings copied") {
		t.Errorf("info --json: %d events, %d lost, captured %q; want %d, %d, no command names or strings",
			ij.Events, ij.Losses.Total, ij.Captured, events, lost)
	}
	// CSV and JSON lines: no comm, no string column, same rows.
	for _, f := range []string{"csv", "jsonl"} {
		out := filepath.Join(dir, "redacted."+f)
		if _, errOut, code := runCLI(t, "export", in, "--format", f, "--redact", "--lost", "keep", "-o", out); code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, errOut)
		}
		checkRawClean(t, out, secrets)
		fh, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		if f == "csv" {
			r := csv.NewReader(fh)
			header, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(header, ","); got != "time,cpu,pid,tid,probe,lost,open.arg1,open_ret.retval,openat.flags" {
				t.Errorf("csv header %s", got)
			}
			for {
				if _, err := r.Read(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				rows++
			}
		} else {
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				var obj map[string]any
				if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"comm", "arg0", "filename"} {
					if _, ok := obj[k]; ok {
						t.Fatalf("jsonl line %d has %s: %s", rows, k, sc.Text())
					}
				}
				rows++
			}
		}
		fh.Close()
		if uint64(rows) != events+5 {
			t.Errorf("%s: %d rows, want %d events and 5 loss records", f, rows, events)
		}
	}

	// Parquet, uncompressed and zstd, and partitioned.
	for _, comp := range []string{"none", "zstd"} {
		out := filepath.Join(dir, "redacted-"+comp+".parquet")
		if _, errOut, code := runCLI(t, "export", in, "--format", "parquet", "--redact", "--compress", comp, "-o", out); code != 0 {
			t.Fatalf("parquet %s: exit %d: %s", comp, code, errOut)
		}
		if comp == "none" {
			checkRawClean(t, out, secrets)
		}
		text, cols, rows := parquetValues(t, out)
		checkClean(t, "parquet "+comp+" (values read back)", text, secrets)
		if got := strings.Join(cols, ","); got != "time,cpu,pid,tid,probe,lost,open.arg1,open_ret.retval,openat.flags" || uint64(rows) != events {
			t.Errorf("parquet %s: columns %s, %d rows", comp, got, rows)
		}
		if !strings.Contains(text, export.RedactedFieldsKey) {
			t.Errorf("parquet %s: metadata does not say it was redacted", comp)
		}
	}
	fleet := filepath.Join(dir, "fleet")
	if _, errOut, code := runCLI(t, "export", in, "--format", "parquet", "--redact", "--partition", "-o", fleet); code != 0 {
		t.Fatalf("partitioned: exit %d: %s", code, errOut)
	}
	var parts []string
	filepath.Walk(fleet, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(fleet, p)
			parts = append(parts, rel)
			text, _, _ := parquetValues(t, p)
			checkClean(t, rel, text, secrets)
		}
		return nil
	})
	sort.Strings(parts)
	checkClean(t, "partition paths", strings.Join(parts, "\n"), secrets)
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "host="+export.HiveNull+"/") {
		t.Errorf("partitioned: %q", parts)
	}

	// Without --redact the arrow export is a faithful copy: the same
	// events, comm names and strings.
	cp := filepath.Join(dir, "copy.arrow")
	if _, errOut, code := runCLI(t, "export", in, "--format", "arrow", "-o", cp); code != 0 {
		t.Fatalf("arrow copy: exit %d: %s", code, errOut)
	}
	_, cpText, cpPer, cpLost := captureValues(t, cp)
	if cpText != inText || fmt.Sprint(cpPer) != fmt.Sprint(perProbe) || cpLost != lost {
		t.Errorf("arrow copy differs from its input")
	}
	if _, _, code := runCLI(t, "export", in, "--format", "parquet", "--compress", "lz4", "-o", filepath.Join(dir, "x.parquet")); code != exitUsage {
		t.Errorf("parquet --compress lz4: exit %d, want %d", code, exitUsage)
	}
}
