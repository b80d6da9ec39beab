//go:build interop

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// sqlHostProbes are the probes of every host of the fleet the SQL parity
// test writes: the same specs, so that a merge makes them one probe each.
var sqlHostProbes = []format.Probe{
	{Name: "val", Kind: "usdt", Spec: "val=U:/bin/app:app:val", Target: "/bin/app",
		Fields: []format.Field{{Name: "u", Type: format.Uint64}, {Name: "s", Type: format.Int64}, {Name: "w", Type: format.Int32}}},
	{Name: "f", Kind: "uprobe", Spec: "f=u:/bin/app:f", Target: "/bin/app"},
	{Name: "f_ret", Kind: "uretprobe", Spec: "f_ret=ur:/bin/app:f", Target: "/bin/app",
		Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	{Name: "issue", Kind: "tracepoint", Spec: "issue=t:block:block_rq_issue(dev,sector)",
		Fields: []format.Field{{Name: "dev", Type: format.Uint32}, {Name: "sector", Type: format.Uint64}}},
	{Name: "complete", Kind: "tracepoint", Spec: "complete=t:block:block_rq_complete(dev,sector,error)",
		Fields: []format.Field{{Name: "dev", Type: format.Uint32}, {Name: "sector", Type: format.Uint64}, {Name: "error", Type: format.Int32}}},
	{Name: "item", Kind: "usdt", Spec: "item=U:/bin/app:app:item", Target: "/bin/app",
		Fields: []format.Field{{Name: "len", Type: format.Uint64}, {Name: "req", Type: format.Uint32}}},
	{Name: "done", Kind: "uretprobe", Spec: "done=ur:/bin/app:flush", Target: "/bin/app",
		Fields: []format.Field{{Name: "ret", Type: format.Int64}, {Name: "req", Type: format.Uint32}}},
}

// sqlEdgeU are uint64 values at every log2 edge: 0, 1, 2^k-1 and 2^k,
// 2^63 and 2^64-1.
func sqlEdgeU() []uint64 {
	vs := []uint64{0, 1, math.MaxUint64, 1 << 63}
	for k := 1; k < 64; k++ {
		vs = append(vs, 1<<k-1, 1<<k)
	}
	return vs
}

// sqlEdgeS are int64 values at the edges, negative ones and the extremes
// among them.
func sqlEdgeS() []int64 {
	vs := []int64{0, 1, -1, math.MinInt64, math.MaxInt64, -2}
	for k := 1; k < 63; k++ {
		vs = append(vs, 1<<k-1, 1<<k, -(1 << k), -(1<<k - 1))
	}
	return vs
}

// writeSQLHost writes one host's capture for the SQL parity test: edge
// values, nested calls of f on several threads (the same tids on every
// host), returns without entry and entries never returned, --key pairs
// with restarts and ends without start, requests with sums that wrap past
// 2^64, ends without items and incomplete ones, and loss records. No two
// events share a time, so that file order and time order agree.
func writeSQLHost(t *testing.T, path, host string, start int64, seed int64, deep bool) {
	t.Helper()
	m := &format.Meta{Host: host, Kernel: "6.1.0-test", Tool: "bpftape test",
		StartBoot: start, StartWall: time.Date(2025, 3, 4, 10, 0, int(seed), 0, time.UTC),
		Probes: sqlHostProbes}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 512})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	tm := start + 1000
	comms := []string{"app", "worker", "db"}
	ev := func(probe uint16, tid uint32, ints ...uint64) {
		tm += 1 + rng.Int63n(200_000)
		e := &format.Event{Time: tm, CPU: uint16(tid % 4), PID: 1000 + tid%2, TID: tid,
			Comm: []byte(comms[int(tid)%len(comms)]), Probe: probe, Ints: ints}
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	us, ss := sqlEdgeU(), sqlEdgeS()
	tids := []uint32{100, 101, 102, 103, 104}
	depth := map[uint32]int{}
	// Returns before any entry: the capture began inside the calls.
	ev(2, 100, 0)
	ev(2, 103, 0)
	for i := 0; i < 3000; i++ {
		tid := tids[rng.Intn(len(tids))]
		switch r := rng.Intn(10); {
		case r < 3:
			u := us[rng.Intn(len(us))]
			s := ss[rng.Intn(len(ss))]
			w32 := int32(rng.Uint32())
			if rng.Intn(4) == 0 {
				w32 = []int32{0, 1, -1, math.MinInt32, math.MaxInt32, 255, 256, -256}[rng.Intn(8)]
			}
			ev(0, tid, u, uint64(s), uint64(int64(w32)))
		case r < 6:
			if depth[tid] > 0 && rng.Intn(2) == 0 || depth[tid] >= 6 {
				ev(2, tid, uint64(rng.Int63n(100)))
				depth[tid]--
			} else {
				ev(1, tid)
				depth[tid]++
			}
			if rng.Intn(50) == 0 {
				ev(2, tid, 0) // one more return than entries when the thread had none open
				depth[tid] = max(depth[tid]-1, 0)
			}
		case r < 8:
			dev, sector := uint64(8+rng.Intn(2)), uint64(rng.Intn(20))
			if rng.Intn(5) == 0 {
				sector = 1<<63 + sector // keys past 2^63 too
			}
			if rng.Intn(2) == 0 {
				ev(3, tid, dev, sector)
			} else {
				ev(4, tid, dev, sector, uint64(int64(-rng.Intn(3))))
			}
		default:
			req := uint64(rng.Intn(6))
			if rng.Intn(3) > 0 {
				ev(5, tid, us[rng.Intn(len(us))], req)
			} else {
				ret := uint64(ss[rng.Intn(len(ss))])
				if rng.Intn(2) == 0 {
					ret = uint64(rng.Intn(40))
				}
				ev(6, tid, ret, req)
			}
		}
		if i%1000 == 999 {
			if err := w.Lost(uint16(i%7), uint16(i%4), tm, uint64(10+i%7)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Items never ended and calls never returned, at the end.
	ev(5, 104, 5, 3)
	ev(1, 104)
	if deep {
		// A thread nested past MaxDepth, never returning.
		for i := 0; i < 4100; i++ {
			ev(1, 999)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// duckQueryJS runs the query on standard input with DuckDB and prints its
// columns and rows, every value as a string (null as null).
const duckQueryJS = `
const duckdb = require("@duckdb/node-api");
let q = "";
process.stdin.on("data", (d) => { q += d; });
process.stdin.on("end", async () => {
  try {
    const inst = await duckdb.DuckDBInstance.create(":memory:");
    const db = await inst.connect();
    const r = await db.runAndReadAll(q);
    const rows = r.getRowObjects().map((o) => {
      const out = {};
      for (const [k, v] of Object.entries(o)) out[k] = v === null ? null : String(v);
      return out;
    });
    process.stdout.write(JSON.stringify({ columns: r.columnNames(), rows }) + "\n");
  } catch (e) {
    process.stderr.write(String(e && e.message ? e.message : e) + "\n");
    process.exit(1);
  }
});
`

type duckResult struct {
	Columns []string             `json:"columns"`
	Rows    []map[string]*string `json:"rows"`
}

// duckSQL prints bpftape sql's query for args and runs it in DuckDB from
// dir, the folder the exports are in.
func duckSQL(t *testing.T, node, interop, dir string, args ...string) duckResult {
	t.Helper()
	q, errOut, code := runCLI(t, append([]string{"sql"}, args...)...)
	if code != 0 {
		t.Fatalf("sql %q: exit %d: %s", args, code, errOut)
	}
	r, err := runDuckDB(node, interop, dir, q)
	if err != nil {
		t.Fatalf("duckdb on sql %q: %v\nquery:\n%s", args, err, q)
	}
	return r
}

// runDuckDB runs query in DuckDB from dir.
func runDuckDB(node, interop, dir, query string) (duckResult, error) {
	var r duckResult
	abs, err := filepath.Abs(interop)
	if err != nil {
		return r, err
	}
	cmd := exec.Command(node, "-e", duckQueryJS)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "NODE_PATH="+filepath.Join(abs, "node_modules"))
	cmd.Stdin = strings.NewReader(query)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return r, err
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("duckdb output %q: %w", out, err)
	}
	return r, nil
}

func (r duckResult) str(i int, col string) string {
	if v := r.Rows[i][col]; v != nil {
		return *v
	}
	return "NULL"
}

// bccJSON is a log2 histogram as hist --json and latency --json print it.
type bccJSON struct {
	Data []struct {
		Start uint64 `json:"interval-start"`
		End   uint64 `json:"interval-end"`
		Count uint64 `json:"count"`
	} `json:"data"`
}

// rows is h as the SQL's rows: "slot low high count" for slots 1 to the
// last with a count, as BCC prints them.
func (h *bccJSON) rows() []string {
	var out []string
	if h == nil {
		return out
	}
	for i, d := range h.Data {
		out = append(out, fmt.Sprintf("%d %d %d %d", i+1, d.Start, d.End, d.Count))
	}
	return out
}

// histRows are the SQL result's histogram rows of hist name ("" for a
// result without a hist column), as bccJSON.rows writes them.
func (r duckResult) histRows(name string) []string {
	var out []string
	for i := range r.Rows {
		if name != "" && r.str(i, "hist") != name || r.str(i, "slot") == "NULL" {
			continue
		}
		out = append(out, strings.Join([]string{r.str(i, "slot"), r.str(i, "low"), r.str(i, "high"), r.str(i, "count")}, " "))
	}
	return out
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\nduckdb:\n%s\nbpftape:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// bpftapeJSON runs a bpftape verb with --json and decodes its output.
func bpftapeJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, code := runCLI(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, errOut)
	}
	if strings.TrimSpace(out) == "" {
		return // an empty histogram prints nothing
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, out)
	}
}

// TestSQLMatchesBpftape exports three hosts' captures, with edge values,
// nested and unmatched calls, --key pairs and requests on the same tids,
// into partitioned Parquet two ways (the merged capture, loss records
// kept; and each host alone, loss records dropped), runs every bpftape sql
// query in DuckDB and compares each answer with bpftape's own on the
// merged capture, bucket for bucket.
func TestSQLMatchesBpftape(t *testing.T) {
	node, interop := interopNode(t)
	dir := t.TempDir()
	var hosts []string
	for i, h := range []string{"hv-01", "hv-02", "hv-03"} {
		p := filepath.Join(dir, h+".arrow")
		// Three boots: the merge shifts two of them onto the first's clock.
		writeSQLHost(t, p, h, int64(5+i*7)*1e9, int64(11+i), i == 0)
		hosts = append(hosts, p)
	}
	merged := filepath.Join(dir, "fleet.arrow")
	if _, errOut, code := runCLI(t, append([]string{"merge", "-o", merged}, hosts...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "export", merged, "--partition", "--lost", "keep", "-o", filepath.Join(dir, "fleet")); code != 0 {
		t.Fatalf("export merged: exit %d: %s", code, errOut)
	}
	for _, h := range hosts {
		if _, errOut, code := runCLI(t, "export", h, "--partition", "-o", filepath.Join(dir, "hosts")); code != 0 {
			t.Fatalf("export %s: exit %d: %s", h, code, errOut)
		}
	}
	info := infoJSON(t, merged)
	if info.Losses.Total == 0 {
		t.Fatal("the merged capture has no loss records: the test would not see them left out")
	}

	windows := [][]string{
		nil,
		{"--comm", "app,db"},
		{"--pid", "1001", "--from", "100ms", "--to", "1.2s"},
		{"--tid", "100,102"},
	}
	// Where the exports are, and what the queries read there. The hosts'
	// own exports have their own boot clocks: no --from/--to there.
	sources := []struct {
		name string
		args []string
		time bool
	}{
		{"merged", []string{"--path", "fleet"}, true},
		{"hosts", []string{"--path", "hosts"}, false},
	}
	run := func(t *testing.T, win []string, q func(src []string)) {
		for _, s := range sources {
			if !s.time && strings.Contains(strings.Join(win, " "), "--from") {
				continue
			}
			q(append(append([]string{}, s.args...), win...))
		}
	}

	t.Run("hist", func(t *testing.T) {
		for _, win := range windows {
			for _, hc := range [][]string{
				{"val", "u"}, {"val", "s"}, {"val", "w"}, {"val", "w", "--cast", "u8"}, {"val", "s", "--cast", "s32"},
				{"val", "u", "--cast", "s16"}, {"f_ret", "retval"}, {"complete", "error"},
			} {
				var want bccJSON
				bpftapeJSON(t, &want, append(append([]string{"hist", merged}, hc...), win...)...)
				if len(want.Data) == 0 {
					t.Fatalf("hist %q %q: bpftape counted nothing", hc, win)
				}
				run(t, win, func(src []string) {
					got := duckSQL(t, node, interop, dir, append(append([]string{"hist", merged}, hc...), src...)...)
					sameRows(t, fmt.Sprintf("hist %q %q", hc, src), got.histRows(""), want.rows())
				})
			}
		}
		// Every slot from 1 to 64 is hit by u and s: the edges are where bpftape puts them.
		var u bccJSON
		bpftapeJSON(t, &u, "hist", merged, "val", "u")
		if len(u.Data) != 64 {
			t.Errorf("val u fills %d slots, want 64", len(u.Data))
		}
	})

	t.Run("count", func(t *testing.T) {
		for _, win := range windows {
			for _, by := range []string{"", "comm", "pid", "tid"} {
				args := []string{"count", merged}
				if by != "" {
					args = append(args, "--by", by)
				}
				var want struct {
					Counts []struct {
						Probe string `json:"probe"`
						Key   string `json:"key"`
						Count uint64 `json:"count"`
					} `json:"counts"`
				}
				bpftapeJSON(t, &want, append(args, win...)...)
				var wantRows []string
				for _, r := range want.Counts {
					wantRows = append(wantRows, fmt.Sprintf("%s|%s|%d", r.Probe, r.Key, r.Count))
				}
				sort.Strings(wantRows)
				run(t, win, func(src []string) {
					got := duckSQL(t, node, interop, dir, append(args, src...)...)
					var rows []string
					for i := range got.Rows {
						key := ""
						if by != "" {
							key = got.str(i, by)
						}
						rows = append(rows, fmt.Sprintf("%s|%s|%s", got.str(i, "probe"), key, got.str(i, "count")))
					}
					sort.Strings(rows)
					sameRows(t, fmt.Sprintf("count --by %q %q", by, src), rows, wantRows)
				})
			}
		}
	})

	type latencyJSON struct {
		Calls            uint64   `json:"calls"`
		UnmatchedReturns uint64   `json:"unmatched_returns"`
		UnmatchedEntries uint64   `json:"unmatched_entries"`
		Overflows        uint64   `json:"overflows"`
		Restarted        uint64   `json:"restarted"`
		Hist             *bccJSON `json:"hist"`
		Stats            struct {
			Sum string `json:"sum"`
		} `json:"stats"`
	}
	t.Run("latency", func(t *testing.T) {
		for _, win := range windows {
			for _, lc := range [][]string{
				{"f", "f_ret"}, {"f", "f_ret", "-u"}, {"f", "f_ret", "-m"},
				{"issue", "complete", "--key", "dev,sector"}, {"issue", "complete", "--key", "sector", "-u"},
			} {
				var want latencyJSON
				bpftapeJSON(t, &want, append(append([]string{"latency", merged}, lc...), win...)...)
				if want.Calls == 0 || win == nil && (want.UnmatchedReturns == 0 || want.UnmatchedEntries == 0) {
					t.Errorf("latency %q %q: bpftape %+v: the case pairs too little to test", lc, win, want)
				}
				unit := lc[len(lc)-1]
				run(t, win, func(src []string) {
					got := duckSQL(t, node, interop, dir, append(append([]string{"latency", merged}, lc...), src...)...)
					what := fmt.Sprintf("latency %q %q", lc, src)
					sameRows(t, what, got.histRows(""), want.Hist.rows())
					if len(got.Rows) == 0 {
						t.Fatalf("%s: no row", what)
					}
					summary := strings.Join([]string{got.str(0, "calls"), got.str(0, "unmatched_returns"),
						got.str(0, "unmatched_entries"), got.str(0, "overflows"), got.str(0, "restarted")}, " ")
					wantSummary := fmt.Sprintf("%d %d %d %d %d", want.Calls, want.UnmatchedReturns, want.UnmatchedEntries, want.Overflows, want.Restarted)
					if summary != wantSummary {
						t.Errorf("%s: calls, unmatched returns and entries, overflows, restarted: duckdb %s, bpftape %s", what, summary, wantSummary)
					}
					if unit != "-u" && unit != "-m" && got.str(0, "total_ns") != want.Stats.Sum {
						t.Errorf("%s: total_ns duckdb %s, bpftape %s", what, got.str(0, "total_ns"), want.Stats.Sum)
					}
				})
			}
		}
		// hv-01's thread 999 nests 4100 calls: 4 past MaxDepth.
		var want latencyJSON
		bpftapeJSON(t, &want, "latency", merged, "f", "f_ret", "--tid", "999")
		got := duckSQL(t, node, interop, dir, "latency", merged, "f", "f_ret", "--tid", "999")
		if want.Overflows != 4 || got.str(0, "overflows") != "4" || got.str(0, "unmatched_entries") != strconv.FormatUint(want.UnmatchedEntries, 10) {
			t.Errorf("past MaxDepth: duckdb overflows %s, unmatched entries %s; bpftape %d, %d",
				got.str(0, "overflows"), got.str(0, "unmatched_entries"), want.Overflows, want.UnmatchedEntries)
		}
	})

	t.Run("requests", func(t *testing.T) {
		type requestsJSON struct {
			Requests         uint64   `json:"requests"`
			EndsWithoutItems uint64   `json:"ends_without_items"`
			Incomplete       uint64   `json:"incomplete"`
			IncompleteItems  uint64   `json:"incomplete_items"`
			End              *bccJSON `json:"end"`
			Total            *bccJSON `json:"total"`
		}
		for _, win := range windows {
			for _, rc := range [][]string{
				{"item", "len", "done", "ret"}, {"item", "len", "done", "ret", "--end-cast", "s32"},
				{"item", "len", "done", "ret", "--key", "req"},
			} {
				var want requestsJSON
				bpftapeJSON(t, &want, append(append([]string{"requests", merged}, rc...), win...)...)
				if want.Requests == 0 || win == nil && (want.EndsWithoutItems == 0 || want.Incomplete == 0) {
					t.Errorf("requests %q %q: bpftape %+v: the case has too little to test", rc, win, want)
				}
				run(t, win, func(src []string) {
					got := duckSQL(t, node, interop, dir, append(append([]string{"requests", merged}, rc...), src...)...)
					what := fmt.Sprintf("requests %q %q", rc, src)
					sameRows(t, what+" end", got.histRows("end"), want.End.rows())
					sameRows(t, what+" total", got.histRows("total"), want.Total.rows())
					summary := strings.Join([]string{got.str(0, "requests"), got.str(0, "ends_without_items"),
						got.str(0, "incomplete"), got.str(0, "incomplete_items")}, " ")
					wantSummary := fmt.Sprintf("%d %d %d %d", want.Requests, want.EndsWithoutItems, want.Incomplete, want.IncompleteItems)
					if summary != wantSummary {
						t.Errorf("%s: requests, ends without items, incomplete, their items: duckdb %s, bpftape %s", what, summary, wantSummary)
					}
				})
			}
		}
		// --global is one sum per host: bpftape's on one host's capture.
		var want requestsJSON
		bpftapeJSON(t, &want, "requests", hosts[1], "item", "len", "done", "ret", "--global")
		if _, errOut, code := runCLI(t, "export", hosts[1], "--partition", "-o", filepath.Join(dir, "one")); code != 0 {
			t.Fatalf("export: exit %d: %s", code, errOut)
		}
		got := duckSQL(t, node, interop, dir, "requests", hosts[1], "item", "len", "done", "ret", "--global", "--path", "one")
		sameRows(t, "requests --global end", got.histRows("end"), want.End.rows())
		sameRows(t, "requests --global total", got.histRows("total"), want.Total.rows())
		if got.str(0, "requests") != strconv.FormatUint(want.Requests, 10) {
			t.Errorf("requests --global: duckdb %s requests, bpftape %d", got.str(0, "requests"), want.Requests)
		}
	})
}
