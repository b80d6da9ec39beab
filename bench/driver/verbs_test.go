package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseDuck(t *testing.T) {
	out := `{"duckdb":"v1.5.5","threads":2}
{"q":"count","wall":[0.5,0.3,0.4],"cpu":[0.9,0.6,0.7],"rows":3}
{"q":"latency","wall":[2],"cpu":[3.5],"rows":16}

{"maxrss_kb":125000}
`
	r, err := parseDuck(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.version != "v1.5.5" || r.threads != 2 || r.maxrssKB != 125000 {
		t.Errorf("got version %q threads %d maxrss %d", r.version, r.threads, r.maxrssKB)
	}
	if q := r.q["count"]; q == nil || median(q.wall) != 0.4 || median(q.cpu) != 0.7 || q.rows != 3 {
		t.Errorf("count: %+v", q)
	}
	if q := r.q["latency"]; q == nil || q.wall[0] != 2 || q.cpu[0] != 3.5 {
		t.Errorf("latency: %+v", q)
	}
	// DuckDB's current_setting may come back as a string.
	if r, err := parseDuck(`{"duckdb":"v1","threads":"2"}`); err != nil || r.threads != 2 {
		t.Errorf("threads as a string: %v, %+v", err, r)
	}
	for _, bad := range []string{
		"",
		`{"q":"count","wall":[1],"cpu":[1],"rows":1}`,                                // no version line
		`{"duckdb":"v1","threads":2}` + "\nError: boom",                              // not JSON
		`{"duckdb":"v1","threads":2}` + "\n" + `{"q":"hist","wall":[1,2],"cpu":[1]}`, // times disagree
	} {
		if _, err := parseDuck(bad); err == nil {
			t.Errorf("parseDuck(%q): no error", bad)
		}
	}
}

func TestVerbLabels(t *testing.T) {
	n := capNames{entry: "rx", field: "arg2", ret: "rx_ret", retField: "retval"}
	want := map[string]string{
		"info":              "info",
		"count --by comm":   "count --by comm",
		"hist":              "hist rx arg2",
		"latency":           "latency rx rx_ret",
		"requests":          "requests rx arg2 rx_ret retval",
		"stacks":            "stacks rx",
		"export -f parquet": "export -f parquet -o OUT --force",
	}
	seen := map[string]bool{}
	for _, v := range replayVerbs {
		seen[v.name] = true
		if w, ok := want[v.name]; ok && v.label(n) != w {
			t.Errorf("%s: label %q, want %q", v.name, v.label(n), w)
		}
		args := v.args(n, "F", "O")
		if len(args) == 0 || !strings.HasPrefix(v.name, args[0]) {
			t.Errorf("%s: args %q do not start with the verb", v.name, args)
		}
		if !contains(args, "F") {
			t.Errorf("%s: args %q lack the file", v.name, args)
		}
	}
	// Every verb the brief names is measured.
	for _, name := range []string{"info", "count", "count --by comm", "hist", "latency", "requests", "compare", "stacks",
		"heatmap", "report", "events", "export -f csv", "export -f parquet"} {
		if !seen[name] {
			t.Errorf("verb %q is not measured", name)
		}
	}
	qs := map[string]bool{}
	for _, q := range duckQuestions {
		qs[q.name] = true
	}
	for _, v := range replayVerbs {
		if v.question != "" && !qs[v.question] {
			t.Errorf("%s asks DuckDB %q, which duckdb_replay.js does not answer", v.name, v.question)
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// testCap is a capture of 100M events whose verbs took the given seconds of
// wall and CPU each and the given peak RSS.
func testCap(big bool, secs map[string]float64, rssKB int64) *verbCap {
	vc := &verbCap{short: "test", big: big, info: capInfo{generated: 1e8, recorded: 1e8, bytes: 4e8},
		names: capNames{entry: "rx", field: "arg2", ret: "rx_ret", retField: "retval"}}
	for _, v := range replayVerbs {
		if v.stacks {
			continue
		}
		s, ok := secs[v.name]
		if !ok {
			s = 1
		}
		vc.runs = append(vc.runs, verbRun{def: v, label: v.label(vc.names),
			run: replayRun{what: v.name, events: 1e8, wall: []float64{s, s, s}, cpu: []float64{s, s * 2, s}, maxrssKB: rssKB}})
	}
	return vc
}

func findTarget(ts []target, prefix string) *target {
	for i := range ts {
		if strings.HasPrefix(ts[i].name, prefix) {
			return &ts[i]
		}
	}
	return nil
}

func TestVerbTargets(t *testing.T) {
	// hist 1 s; latency 1.5 s: 0.67× (PASS); report 3 s: 0.33× (FAIL);
	// events 9 s: 0.11× (PASS); parquet 6 s: 0.17× (FAIL); info 40 ms
	// (PASS), count 60 ms (FAIL).
	vc := testCap(true, map[string]float64{"hist": 1, "latency": 1.5, "report": 3, "events": 9, "export -f parquet": 6,
		"info": 0.04, "count": 0.06, "heatmap": 0.5, "count --by comm": 2}, 100<<10)
	vc.duck = &duckResult{version: "v1", threads: 2, q: map[string]*duckQuery{
		"hist":       {wall: []float64{0.5}, cpu: []float64{0.5}},
		"latency":    {wall: []float64{3}, cpu: []float64{3}},
		"count":      {wall: []float64{0.01}, cpu: []float64{0.01}},
		"count_comm": {wall: []float64{4}, cpu: []float64{4}},
		// no heatmap answer: N/A
	}}
	ts := vc.targets(nil, "")
	want := map[string]string{
		"latency rx rx_ret ≥ 0.5×":                  "PASS",
		"report ≥ 0.5×":                             "FAIL",
		"events ≥ 0.1×":                             "PASS",
		"export -f parquet -o OUT --force ≥ 0.2×":   "FAIL",
		"export -f csv -o":                          "",
		"info ≤ 50 ms":                              "PASS",
		"count ≤ 50 ms":                             "FAIL",
		"hist rx arg2 ≥ DuckDB":                     "FAIL",
		"latency rx rx_ret ≥ DuckDB":                "PASS",
		"count ≥ DuckDB":                            "FAIL",
		"count --by comm ≥ DuckDB":                  "PASS",
		"heatmap rx arg2 ≥ DuckDB":                  "N/A",
		"heatmap rx arg2 ≥ 0.5×":                    "PASS",
		"peak RSS of every verb ≤ 256 MiB":          "PASS",
		"hist rx arg2 ≥":                            "FAIL", // only against DuckDB: hist is not held to itself
		"info ≥ DuckDB":                             "",
		"compare rx arg2 rx_ret retval ≥ 0.5× hist": "PASS",
	}
	for prefix, res := range want {
		tg := findTarget(ts, prefix)
		switch {
		case res == "" && tg != nil:
			t.Errorf("%q: unexpected target %q", prefix, tg.name)
		case res != "" && tg == nil:
			t.Errorf("%q: no target", prefix)
		case tg != nil && tg.result() != res:
			t.Errorf("%s: %s (%s), want %s", tg.name, tg.result(), tg.measured, res)
		}
	}
	if tg := findTarget(ts, "latency rx rx_ret ≥ 0.5×"); tg != nil && !strings.HasPrefix(tg.measured, "0.67×") {
		t.Errorf("latency: measured %q", tg.measured)
	}
	if tg := findTarget(ts, "latency rx rx_ret ≥ DuckDB"); tg != nil && !strings.HasPrefix(tg.measured, "2.00× wall") {
		t.Errorf("latency vs DuckDB: measured %q", tg.measured)
	}

	// Not the big capture: no ms or RSS rows.
	small := testCap(false, nil, 300<<10)
	ts = small.targets(nil, "")
	if tg := findTarget(ts, "info ≤"); tg != nil {
		t.Errorf("small capture has %q", tg.name)
	}
	if tg := findTarget(ts, "peak RSS"); tg != nil {
		t.Errorf("small capture has %q", tg.name)
	}
	if tg := findTarget(ts, "count ≥ DuckDB"); tg == nil || tg.result() != "N/A" {
		t.Errorf("no DuckDB run: %+v, want N/A", tg)
	}

	// RSS over the bound names the verb.
	fat := testCap(true, nil, 300<<10)
	if tg := findTarget(fat.targets(nil, ""), "peak RSS"); tg == nil || tg.result() != "FAIL" || !strings.Contains(tg.measured, "over: info 300.0") {
		t.Errorf("RSS over: %+v", tg)
	}

	// A failed verb fails its rows and the RSS row; a DuckDB error fails
	// the DuckDB rows; a capture error fails everything.
	bad := testCap(true, nil, 100<<10)
	lat := bad.find("latency")
	lat.run.err, lat.run.wall, lat.run.cpu = "latency failed (exit status 1): boom", nil, nil
	bad.duck = &duckResult{err: "node failed"}
	ts = bad.targets(nil, "")
	for prefix, res := range map[string]string{"latency rx rx_ret ≥ 0.5×": "FAIL", "latency rx rx_ret ≥ DuckDB": "FAIL",
		"hist rx arg2 ≥ DuckDB": "FAIL", "peak RSS": "FAIL", "report ≥ 0.5×": "PASS"} {
		if tg := findTarget(ts, prefix); tg == nil || tg.result() != res {
			t.Errorf("%s: %+v, want %s", prefix, tg, res)
		}
	}
	for _, tg := range testCap(true, nil, 1).targets([]string{"recorded 9 of the 10 events fired"}, "") {
		if tg.result() != "FAIL" {
			t.Errorf("capture error: %s is %s", tg.name, tg.result())
		}
	}
	for _, tg := range testCap(true, nil, 1).targets(nil, "capture: not measured") {
		if tg.result() != "N/A" {
			t.Errorf("capture missing: %s is %s", tg.name, tg.result())
		}
	}
}

func TestPrintVerbs(t *testing.T) {
	vc := testCap(true, map[string]float64{"hist": 0.5}, 100<<10)
	vc.duck = &duckResult{version: "v1.5.5", threads: 2, parquet: 5e8, q: map[string]*duckQuery{"hist": {wall: []float64{1}, cpu: []float64{1.5}}}}
	var b bytes.Buffer
	var errs []string
	printVerbs(&b, []*verbCap{vc}, &errs)
	out := b.String()
	for _, s := range []string{"hist rx arg2", "1.00×", "2.00×", "SET threads = 2", "wall s", "500 MB Parquet"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	if len(errs) != 0 {
		t.Errorf("errors: %q", errs)
	}
}
