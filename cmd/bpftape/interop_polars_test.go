//go:build interop

package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// TestPolarsReadsCapture opens a bpftape capture with nodejs-polars, an
// Arrow reader that shares no code with bpftape, and checks that its event
// counts, its per-bucket log2 histogram (computed in polars expressions)
// and the sum of its times (the time column's zstd frames come from
// bpftape's own encoder, format/internal/zstdframe) equal bpftape's.
func TestPolarsReadsCapture(t *testing.T) {
	path := filepath.Join(seedCaptures(t), replaytest.USDTFile)
	out := readJS(t, path, "rx_end.arg1")
	var got struct {
		Rows     uint64                       `json:"rows"`
		PerProbe map[string]uint64            `json:"per_probe"`
		Hist     map[string]map[string]uint64 `json:"hist"`
		Lost     uint64                       `json:"lost"`
		TimeSum  string                       `json:"time_sum"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("read.js output %q: %v", out, err)
	}

	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, _, err := replay.Info(c, true, new(discard))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows != info.Events || got.Lost != 0 {
		t.Errorf("polars: %d rows, %d lost; bpftape: %d events", got.Rows, got.Lost, info.Events)
	}
	for p, n := range info.PerProbe {
		if got.PerProbe[p] != n {
			t.Errorf("probe %s: polars counts %d, bpftape %d", p, got.PerProbe[p], n)
		}
	}
	// rx_end arg1 is the seed's USDT RX length histogram.
	for i, n := range replaytest.USDTRXLen {
		if g := got.Hist["rx_end"][strconv.Itoa(i+1)]; g != n {
			t.Errorf("rx_end arg1 slot %d: polars %d, bpftape %d", i+1, g, n)
		}
	}
	if len(got.Hist["rx_end"]) == 0 {
		t.Error("polars computed no histogram")
	}
	if want := timeSum(t, path); got.TimeSum != want {
		t.Errorf("sum of times: polars %s, bpftape %s", got.TimeSum, want)
	}
}

// readJS runs testdata/interop/read.js with args under node, nodejs-polars
// installed, and returns what it printed; it skips the test without node.
func readJS(t *testing.T, args ...string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: cannot run the nodejs-polars reader")
	}
	interop := filepath.Join("..", "..", "testdata", "interop")
	skipShortWithoutReaders(t, interop)
	if out, err := exec.Command("sh", filepath.Join(interop, "install.sh")).CombinedOutput(); err != nil {
		t.Fatalf("install nodejs-polars: %v\n%s", err, out)
	}
	out, err := exec.Command(node, append([]string{filepath.Join(interop, "read.js")}, args...)...).Output()
	if err != nil {
		t.Fatalf("read.js: %v", err)
	}
	return out
}

// timeSum is the sum of the capture's times, every row's, as a u64 that
// wraps, in decimal.
func timeSum(t *testing.T, path string) string {
	t.Helper()
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sum uint64
	for r.Next() {
		for _, v := range r.Batch().Time {
			sum += uint64(v)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(sum, 10)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestPolarsReadsRuns opens with nodejs-polars a capture of the seed-like
// stream, whose tid, cpu and field columns come in runs of one value and
// are written by bpftape's own run encoder (format/internal/zstdframe),
// and checks that polars sums each column, every row's value, to what
// bpftape reads.
func TestPolarsReadsRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.arrow")
	if err := formattest.WriteFile(path, 200_000, nil, format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	cols := []string{"cpu", "pid", "tid", format.ColumnName("rx", "arg2")}
	args := []string{path}
	for _, c := range cols {
		args = append(args, "--sum="+c)
	}
	out := readJS(t, args...)
	var got struct {
		Sums map[string]string `json:"sums"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("read.js output %q: %v", out, err)
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := map[string]uint64{}
	arg2 := r.Column(cols[3])
	for r.Next() {
		b := r.Batch()
		for i := range b.Len {
			want["cpu"] += uint64(b.CPU[i])
			want["pid"] += uint64(b.PID[i])
			want["tid"] += uint64(b.TID[i])
			if c := b.Col(arg2); c.Valid(i) {
				want[cols[3]] += uint64(c.Int(i))
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if w := strconv.FormatUint(want[c], 10); got.Sums[c] != w {
			t.Errorf("sum of %s: polars %s, bpftape %s", c, got.Sums[c], w)
		}
	}
}
