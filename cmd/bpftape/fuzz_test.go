package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

// FuzzVerbs runs the analysis verbs — info, events, hist, latency,
// requests, compare, report, heatmap, export, repair, stacks and
// flamegraph — on a fuzzed
// capture, in process: a panic anywhere fails, and every verb must end
// with one of its exit statuses. The seeds are a small valid capture and
// every forged capture of package hostile; `make fuzz` runs it, `make
// test` replays the seeds and the corpus in testdata/fuzz/FuzzVerbs.
func FuzzVerbs(f *testing.F) {
	dir := f.TempDir()
	seed := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	valid := filepath.Join(dir, "valid.arrow")
	m := formattest.Meta()
	if err := formattest.WriteFile(valid, 3000, m, format.WriterOptions{BatchRows: 1024}, 500); err != nil {
		f.Fatal(err)
	}
	seed(valid)
	for _, c := range hostile.Captures() {
		if c.Name == "many-hosts" {
			continue // thousands of partition files an input: too slow to fuzz
		}
		if testing.Short() && (c.Name == "stacks-merge" || c.Name == "stacks-maps" || c.Name == "stacks-kernel") {
			// 10-17 s each here; TestHostileCaptures runs every verb on them (as root),
			// TestKeyIntervalHostile runs latency on them, and make test keeps them as seeds.
			continue
		}
		p := filepath.Join(dir, c.Name+".arrow")
		if err := c.Write(p); err != nil {
			f.Fatal(err)
		}
		seed(p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		in := filepath.Join(d, "in.arrow")
		if err := os.WriteFile(in, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out := func(n string) string { return filepath.Join(d, n) }
		// The forged captures name req/req_ret, the valid one rx/rx_ret.
		for _, p := range [][2]string{{"req", "req_ret"}, {"rx", "rx_ret"}} {
			for _, args := range [][]string{
				{"info", in}, {"info", "--json", in}, {"events", in},
				{"hist", in, p[0], "arg0"}, {"hist", in, p[0], "arg2", "--by", "comm"},
				{"latency", in, p[0], p[1]}, {"requests", in, p[0], "arg2", p[1], "retval"},
				{"compare", in, p[0], "arg2", p[1], "retval"},
				{"report", in, "-o", out("r.html"), "--force"},
				{"heatmap", in, "--latency", p[0], p[1], "-o", out("h.svg"), "--force"},
				{"export", in, "--format", "csv", "-o", out("x.csv"), "--force"},
				{"export", in, "--format", "parquet", "-o", out("x.parquet"), "--force"},
				{"repair", in, out("fixed.arrow"), "--force"},
				{"stacks", in, p[0]}, {"stacks", "--text", in},
				{"flamegraph", in, p[0], "-o", out("f.svg"), "--force"},
			} {
				if code := run(args, io.Discard, io.Discard); code < 0 || code > exitDiffer {
					t.Errorf("%v: exit %d", args, code)
				}
			}
		}
	})
}
