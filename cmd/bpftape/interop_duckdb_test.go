//go:build interop

package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/replay/replaytest"
)

// interopNode returns node and the interop folder with its npm modules
// installed, or skips the test when node is missing.
func interopNode(t *testing.T) (string, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: cannot run the nodejs-polars and DuckDB readers")
	}
	interop := filepath.Join("..", "..", "testdata", "interop")
	skipShortWithoutReaders(t, interop)
	if out, err := exec.Command("sh", filepath.Join(interop, "install.sh")).CombinedOutput(); err != nil {
		t.Fatalf("install the interop readers: %v\n%s", err, out)
	}
	return node, interop
}

// readerOut is what read.js (polars) and duckdb.js print.
type readerOut struct {
	Rows     uint64                       `json:"rows"`
	Columns  map[string]string            `json:"-"`
	RawCols  json.RawMessage              `json:"columns"`
	Dtypes   map[string]string            `json:"dtypes"`
	PerProbe map[string]uint64            `json:"per_probe"`
	PerHost  map[string]uint64            `json:"per_host"`
	Hist     map[string]map[string]uint64 `json:"hist"`
	Lost     uint64                       `json:"lost"`
	Values   map[string][]string          `json:"values"`
	Meta     *struct {
		Host   string   `json:"host"`
		Probes []string `json:"probes"`
	} `json:"meta"`
}

func runReader(t *testing.T, node, script string, args ...string) readerOut {
	t.Helper()
	cmd := exec.Command(node, append([]string{script}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\n%s", filepath.Base(script), args, err, msg)
	}
	var r readerOut
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s output %q: %v", filepath.Base(script), out, err)
	}
	// duckdb.js maps columns to types; read.js lists them and maps dtypes.
	json.Unmarshal(r.RawCols, &r.Columns)
	return r
}

// bpftapeSlots is bpftape's log2 histogram of a probe field by slot, from
// hist --json (BCC's print_json_hist data starts at slot 1).
func bpftapeSlots(t *testing.T, path, probe, field string) map[string]uint64 {
	t.Helper()
	out, errOut, code := runCLI(t, "hist", path, probe, field, "--json")
	if code != 0 {
		t.Fatalf("hist: exit %d: %s", code, errOut)
	}
	var h struct {
		Data []struct {
			Count uint64 `json:"count"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatal(err)
	}
	slots := map[string]uint64{}
	for i, d := range h.Data {
		if d.Count > 0 {
			slots[strconv.Itoa(i+1)] = d.Count
		}
	}
	return slots
}

func sameCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDuckDBReadsParquet exports the seed's USDT capture to Parquet and reads
// it with DuckDB, an engine that shares no code with bpftape: the event
// counts, the per-bucket log2 histogram computed in SQL, the column types
// and the metadata must be bpftape's.
func TestDuckDBReadsParquet(t *testing.T) {
	node, interop := interopNode(t)
	path := filepath.Join(seedCaptures(t), replaytest.USDTFile)
	pq := filepath.Join(t.TempDir(), "usdt.parquet")
	if _, errOut, code := runCLI(t, "export", path, "--format", "parquet", "-o", pq); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	got := runReader(t, node, filepath.Join(interop, "duckdb.js"), pq, "rx_end.arg1")
	info := infoJSON(t, path)
	if got.Rows != info.Events || got.Lost != 0 || !sameCounts(got.PerProbe, info.PerProbe) {
		t.Errorf("duckdb: %d rows %v; bpftape: %d events %v", got.Rows, got.PerProbe, info.Events, info.PerProbe)
	}
	for i, n := range replaytest.USDTRXLen {
		if g := got.Hist["rx_end"][strconv.Itoa(i+1)]; g != n {
			t.Errorf("rx_end arg1 slot %d: duckdb %d, seed %d", i+1, g, n)
		}
	}
	if want := bpftapeSlots(t, path, "rx_end", "arg1"); !sameCounts(got.Hist["rx_end"], want) {
		t.Errorf("rx_end arg1: duckdb %v, bpftape %v", got.Hist["rx_end"], want)
	}
	wantTypes := map[string]string{"time": "BIGINT", "cpu": "USMALLINT", "pid": "UINTEGER", "tid": "UINTEGER",
		"comm": "VARCHAR", "probe": "VARCHAR", "rx_end.arg0": "UBIGINT", "rx_end.arg1": "UBIGINT", "tx_len.arg0": "BIGINT", "tx_flush.retval": "INTEGER"}
	for c, ty := range wantTypes {
		if got.Columns[c] != ty {
			t.Errorf("column %s: duckdb type %s, want %s", c, got.Columns[c], ty)
		}
	}
	if got.Meta == nil || got.Meta.Host != "seed-host" || strings.Join(got.Meta.Probes, ",") != "rx_end,tx_len,tx_flush" {
		t.Errorf("bpftape metadata in the Parquet footer: %+v", got.Meta)
	}
}

// TestReadersAgreeOnLosses reads a capture with loss records with polars
// (the Arrow file) and DuckDB (its Parquet export with --lost keep): both
// see bpftape's events, losses and histogram.
func TestReadersAgreeOnLosses(t *testing.T) {
	node, interop := interopNode(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "v.arrow")
	writeVnet(t, path, "hv-07", 12000)
	pq := filepath.Join(dir, "v.parquet")
	if _, errOut, code := runCLI(t, "export", path, "--format", "parquet", "--lost", "keep", "-o", pq); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	info := infoJSON(t, path)
	want := bpftapeSlots(t, path, "rx", "arg2")
	pol := runReader(t, node, filepath.Join(interop, "read.js"), path, "rx.arg2")
	duck := runReader(t, node, filepath.Join(interop, "duckdb.js"), pq, "rx.arg2")
	for name, r := range map[string]readerOut{"polars": pol, "duckdb": duck} {
		if r.Rows != info.Events+3 || r.Lost != info.Losses.Total || !sameCounts(r.PerProbe, info.PerProbe) {
			t.Errorf("%s: %d rows, %d lost, %v; bpftape: %d events + 3 loss records, %d lost, %v",
				name, r.Rows, r.Lost, r.PerProbe, info.Events, info.Losses.Total, info.PerProbe)
		}
		if !sameCounts(r.Hist["rx"], want) {
			t.Errorf("%s: rx arg2 %v, bpftape %v", name, r.Hist["rx"], want)
		}
	}
}

// TestReadersSeeFleet reads several hosts' captures two ways: merged into
// one capture (polars reads its host column) and exported into one
// hive-partitioned folder (DuckDB reads host and probe from the folders).
func TestReadersSeeFleet(t *testing.T) {
	node, interop := interopNode(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	writeVnet(t, a, "hv-07", 3000)
	writeVnet(t, b, "hv-08", 5000)
	ia, ib := infoJSON(t, a), infoJSON(t, b)
	fleet := filepath.Join(dir, "fleet")
	for _, in := range []string{a, b} {
		if _, errOut, code := runCLI(t, "export", in, "--format", "parquet", "--partition", "-o", fleet); code != 0 {
			t.Fatalf("export: exit %d: %s", code, errOut)
		}
	}
	duck := runReader(t, node, filepath.Join(interop, "duckdb.js"), filepath.Join(fleet, "*", "*", "*.parquet"), "rx.arg2")
	if duck.PerHost["hv-07"] != ia.Events || duck.PerHost["hv-08"] != ib.Events || duck.Columns["host"] != "VARCHAR" {
		t.Errorf("duckdb per host %v (host column %q); bpftape %d and %d", duck.PerHost, duck.Columns["host"], ia.Events, ib.Events)
	}
	if duck.PerProbe["rx"] != ia.PerProbe["rx"]+ib.PerProbe["rx"] {
		t.Errorf("duckdb rx %d, bpftape %d", duck.PerProbe["rx"], ia.PerProbe["rx"]+ib.PerProbe["rx"])
	}

	m := filepath.Join(dir, "m.arrow")
	if _, errOut, code := runCLI(t, "merge", a, b, "-o", m); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	pol := runReader(t, node, filepath.Join(interop, "read.js"), m, "rx.arg2", "--values=rx.host")
	want := bpftapeSlots(t, m, "rx", "arg2")
	if pol.PerProbe["rx"] != ia.PerProbe["rx"]+ib.PerProbe["rx"] || pol.Lost != ia.Losses.Total+ib.Losses.Total || !sameCounts(pol.Hist["rx"], want) {
		t.Errorf("polars on the merged capture: %v, lost %d, rx %v; bpftape rx %v", pol.PerProbe, pol.Lost, pol.Hist["rx"], want)
	}
	if !sameCounts(duck.Hist["rx"], want) {
		t.Errorf("duckdb fleet rx arg2 %v, bpftape merged %v", duck.Hist["rx"], want)
	}
	// Every probe of a merged capture has a host field: rx's is "rx.host".
	if !strings.Contains(strings.ToLower(pol.Dtypes["rx.host"]), "str") {
		t.Errorf("polars sees rx.host as %q", pol.Dtypes["rx.host"])
	}
	hosts := map[string]uint64{}
	for _, h := range pol.Values["rx.host"] {
		hosts[h]++
	}
	if hosts["hv-07"] != ia.PerProbe["rx"] || hosts["hv-08"] != ib.PerProbe["rx"] || len(hosts) != 2 {
		t.Errorf("polars rx events per host %v; bpftape %d and %d", hosts, ia.PerProbe["rx"], ib.PerProbe["rx"])
	}
}
