package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/replay/replaytest"
)

// TestExportRows exports the seed's USDT capture as CSV and JSON lines and
// checks one row per event, with the values bpftape reads.
func TestExportRows(t *testing.T) {
	path := filepath.Join(seedCaptures(t), replaytest.USDTFile)
	info := infoJSON(t, path)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "e.csv")
	if _, errOut, code := runCLI(t, "export", path, "--format", "csv", "-o", csvPath); code != 0 {
		t.Fatalf("csv: exit %d: %s", code, errOut)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	header, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(header, ","); got != "time,cpu,pid,tid,comm,probe,rx_end.arg0,rx_end.arg1,tx_len.arg0,tx_flush.retval" {
		t.Fatalf("header %s", got)
	}
	perProbe := map[string]uint64{}
	var sumLen int64
	var rows uint64
	for {
		rec, err := r.Read()
		if err != nil {
			break
		}
		rows++
		perProbe[rec[5]]++
		if rec[5] == "tx_len" {
			var v int64
			json.Unmarshal([]byte(rec[8]), &v)
			sumLen += v
			if rec[6] != "" || rec[9] != "" {
				t.Fatalf("tx_len row with other probes' fields: %v", rec)
			}
		}
	}
	if rows != info.Events || perProbe["tx_len"] != info.PerProbe["tx_len"] || perProbe["rx_end"] != info.PerProbe["rx_end"] {
		t.Errorf("csv: %d rows %v; bpftape: %d events %v", rows, perProbe, info.Events, info.PerProbe)
	}

	// JSON lines, a window and one pid: every line an object of the window.
	stdout, errOut, code := runCLI(t, "export", path, "--format", "jsonl", "--from", "100ms", "--to", "200ms", "--pid", "4242")
	if code != 0 {
		t.Fatalf("jsonl: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var total int64
	for i, l := range lines {
		var obj struct {
			Time  int64  `json:"time"`
			Probe string `json:"probe"`
			Arg1  *int64 `json:"rx_end.arg1"`
		}
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if off := obj.Time - 5_000_000_000; off < 100e6 || off >= 200e6 {
			t.Fatalf("line %d outside the window: %s", i, l)
		}
		if obj.Arg1 != nil {
			total += *obj.Arg1
		}
	}
	if len(lines) < 1000 || total == 0 {
		t.Errorf("%d lines in 100ms, rx_end arg1 total %d", len(lines), total)
	}
}

// TestExportLost checks that loss records are dropped with a warning by
// default and kept, with a lost column, on request.
func TestExportLost(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v.arrow")
	writeVnet(t, path, "hv-07", 9000)
	info := infoJSON(t, path)
	stdout, errOut, code := runCLI(t, "export", path, "--format", "csv")
	if code != 0 || !strings.Contains(errOut, "WARNING") || strings.Contains(strings.SplitN(stdout, "\n", 2)[0], "lost") {
		t.Fatalf("drop: exit %d, stderr %q", code, errOut)
	}
	if n := strings.Count(stdout, "\n") - 1; uint64(n) != info.Events {
		t.Errorf("drop: %d rows, %d events", n, info.Events)
	}
	stdout, _, _ = runCLI(t, "export", path, "--format", "csv", "--lost", "only")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if lines[0] != "time,cpu,pid,tid,comm,probe,lost,rx.arg2,rx_ret.retval,tx_len.arg0,tx_ret.retval" || len(lines) != 1+2 {
		t.Errorf("only: %q", lines)
	}
	stdout, _, _ = runCLI(t, "export", path, "--format", "jsonl", "--lost", "keep")
	if n := strings.Count(stdout, "\n"); uint64(n) != info.Events+2 || strings.Count(stdout, `"lost":null`) != int(info.Events) {
		t.Errorf("keep: %d lines for %d events and 2 loss records", n, info.Events)
	}
}

// TestExportPartition writes two hosts' captures into one hive-style folder.
func TestExportPartition(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	writeVnet(t, a, "hv-07", 3000)
	writeVnet(t, b, "hv 08", 2000)
	out := filepath.Join(dir, "fleet")
	for _, in := range []string{a, b} {
		if _, errOut, code := runCLI(t, "export", in, "--format", "parquet", "--partition", "-o", out); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	var files []string
	filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(out, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	var want []string
	for _, h := range []string{"hv 08", "hv-07"} {
		for _, p := range []string{"rx", "rx_ret", "tx_len", "tx_ret"} {
			want = append(want, "host="+h+"/probe="+p+"/part-0.parquet")
		}
	}
	if strings.Join(files, "\n") != strings.Join(want, "\n") {
		t.Errorf("files:\n%s\nwant:\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
}

type infoResult struct {
	Events   uint64            `json:"events"`
	PerProbe map[string]uint64 `json:"events_per_probe"`
	Captured string            `json:"captured"`
	Losses   struct {
		Total   uint64            `json:"total"`
		ByProbe map[string]uint64 `json:"by_probe"`
	} `json:"losses"`
	Meta struct {
		Host   string `json:"host"`
		Inputs []struct {
			Host string `json:"host"`
		} `json:"inputs"`
	} `json:"meta"`
}

func infoJSON(t *testing.T, path string) infoResult {
	t.Helper()
	out, errOut, code := runCLI(t, "info", path, "--json")
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, errOut)
	}
	var r infoResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}
