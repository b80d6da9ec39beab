package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMerge merges two hosts' captures and replays the result: info, hist
// (the fleet, and per host with --by host), latency, requests and events.
func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	writeVnet(t, a, "hv-07", 8000)
	writeVnet(t, b, "hv-08", 8000)
	m := filepath.Join(dir, "fleet.arrow")
	out, errOut, code := runCLI(t, "merge", a, b, "-o", m)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "hosts hv-07, hv-08") || !strings.Contains(out, "lost events") {
		t.Errorf("merge said %q", out)
	}
	ia, im := infoJSON(t, a), infoJSON(t, m)
	if im.Events != 2*ia.Events || im.Losses.Total != 2*ia.Losses.Total || im.Meta.Host != "hv-07,hv-08" || len(im.Meta.Inputs) != 2 {
		t.Errorf("merged info: %d events, %d lost, host %q, %d inputs; one input: %d events, %d lost",
			im.Events, im.Losses.Total, im.Meta.Host, len(im.Meta.Inputs), ia.Events, ia.Losses.Total)
	}
	for p, n := range ia.PerProbe {
		if im.PerProbe[p] != 2*n {
			t.Errorf("probe %s: %d events merged, %d in each input", p, im.PerProbe[p], n)
		}
	}
	// The fleet histogram is twice each input's; --by host splits it back.
	hist := func(args ...string) []uint64 {
		out, errOut, code := runCLI(t, append([]string{"hist"}, args...)...)
		if code != 0 {
			t.Fatalf("hist %v: exit %d: %s", args, code, errOut)
		}
		var h struct {
			Data []struct {
				Count uint64 `json:"count"`
			} `json:"data"`
		}
		var counts []uint64
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if err := json.Unmarshal([]byte(line), &h); err != nil {
				t.Fatal(err)
			}
			for _, d := range h.Data {
				counts = append(counts, d.Count)
			}
		}
		return counts
	}
	one, fleet := hist(a, "rx", "arg2", "--json"), hist(m, "rx", "arg2", "--json")
	byHost := hist(m, "rx", "arg2", "--json", "--by", "host")
	if len(one) == 0 || len(fleet) != len(one) || len(byHost) != 2*len(one) {
		t.Fatalf("histograms: %d, %d, %d buckets", len(one), len(fleet), len(byHost))
	}
	for i := range one {
		if fleet[i] != 2*one[i] || byHost[i] != one[i] || byHost[len(one)+i] != one[i] {
			t.Errorf("bucket %d: input %d, fleet %d, by host %d and %d", i, one[i], fleet[i], byHost[i], byHost[len(one)+i])
		}
	}
	text, _, _ := runCLI(t, "hist", m, "rx", "arg2", "--by", "host")
	if !strings.Contains(text, "host = 'hv-07'") || !strings.Contains(text, "host = 'hv-08'") {
		t.Errorf("hist --by host:\n%s", text)
	}
	// Pairing verbs work per host: the same calls and requests as the inputs together.
	for _, args := range [][]string{{"latency", "rx", "rx_ret", "--json"}, {"requests", "tx_len", "arg0", "tx_ret", "retval", "--json"}} {
		ra, _, _ := runCLI(t, append([]string{args[0], a}, args[1:]...)...)
		rm, errOut, code := runCLI(t, append([]string{args[0], m}, args[1:]...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, errOut)
		}
		var ja, jm map[string]any
		json.Unmarshal([]byte(ra), &ja)
		json.Unmarshal([]byte(rm), &jm)
		key := "calls"
		if args[0] == "requests" {
			key = "requests"
		}
		if jm[key].(float64) != 2*ja[key].(float64) {
			t.Errorf("%s: %v merged, %v in one input", args[0], jm[key], ja[key])
		}
	}
	ev, _, code := runCLI(t, "events", m, "-n", "2", "--time", "none")
	if code != 0 || !strings.Contains(ev, `host="hv-07"`) {
		t.Errorf("events:\n%s", ev)
	}
}

// TestMergeSameFileTwice: a capture given twice, by its name or through a
// link, is refused: merged, every event of it would count twice.
func TestMergeSameFileTwice(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	writeVnet(t, a, "hv-07", 100)
	writeVnet(t, b, "hv-08", 100)
	link := filepath.Join(dir, "link.arrow")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "m.arrow")
	for _, in := range [][]string{{a, a}, {a, b, link}} {
		_, errOut, code := runCLI(t, append(append([]string{"merge"}, in...), "-o", m)...)
		if code != exitUsage || !strings.Contains(errOut, "are the same file") {
			t.Errorf("merge %v: exit %d, %q; want %d and the same file named", in, code, errOut, exitUsage)
		}
	}
	if _, err := os.Stat(m); !os.IsNotExist(err) {
		t.Errorf("a refused merge left %s: %v", m, err)
	}
	// A capture written to a name another format's extension gives is
	// written, with a warning.
	csv := filepath.Join(dir, "fleet.csv")
	if _, errOut, code := runCLI(t, "merge", a, b, "-o", csv); code != exitOK || !strings.Contains(errOut, "WARNING: writing an Arrow capture to "+csv+", though its extension says csv") {
		t.Errorf("merge -o fleet.csv: exit %d, %q", code, errOut)
	}
}
