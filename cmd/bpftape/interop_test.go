package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// TestPolarsReadsCapture opens a bpftape capture with nodejs-polars, an
// Arrow reader that shares no code with bpftape, and checks that its event
// counts and its per-bucket log2 histogram (computed in polars expressions)
// equal bpftape's.
func TestPolarsReadsCapture(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: cannot run the nodejs-polars reader")
	}
	interop := filepath.Join("..", "..", "testdata", "interop")
	if out, err := exec.Command("sh", filepath.Join(interop, "install.sh")).CombinedOutput(); err != nil {
		t.Fatalf("install nodejs-polars: %v\n%s", err, out)
	}
	path := filepath.Join(seedCaptures(t), replaytest.USDTFile)
	out, err := exec.Command(node, filepath.Join(interop, "read.js"), path, "rx_end.arg1").Output()
	if err != nil {
		t.Fatalf("read.js: %v", err)
	}
	var got struct {
		Rows     uint64                       `json:"rows"`
		PerProbe map[string]uint64            `json:"per_probe"`
		Hist     map[string]map[string]uint64 `json:"hist"`
		Lost     uint64                       `json:"lost"`
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
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
