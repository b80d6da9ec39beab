package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestReportFindsLatencyPairs checks that `bpftape report` without
// --latency shows the latency of the capture's uprobe and uretprobe on
// one function (rx and rx_ret of the virtio-net demo), and that --latency
// replaces the pairs it finds.
func TestReportFindsLatencyPairs(t *testing.T) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "vnet.arrow")
	writeVnet(t, capPath, "hv-07", 2000)
	html := filepath.Join(dir, "report.html")
	read := func(args ...string) string {
		t.Helper()
		_, errOut, code := runCLI(t, append([]string{"report", capPath, "-o", html, "--force"}, args...)...)
		if code != 0 {
			t.Fatalf("report %q: exit %d: %s", args, code, errOut)
		}
		b, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	page := read()
	for _, want := range []string{`<h2 id="latency">`, "rx → rx_ret", "2,000 calls", "the report paired"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	page = read("--latency", "tx_len tx_ret")
	if !strings.Contains(page, "tx_len → tx_ret") || strings.Contains(page, "rx → rx_ret") || strings.Contains(page, "the report paired") {
		t.Error("--latency tx_len tx_ret: the report still shows the pair it found")
	}
	if page = read("--pairs", "0"); strings.Contains(page, "rx → rx_ret") || strings.Contains(page, `<h2 id="latency">`) {
		t.Error("--pairs 0: the report still shows the pair it found")
	}
}

// TestEventsPrintsAddresses checks that `bpftape events` prints a field
// the capture marks as an address in hex.
func TestEventsPrintsAddresses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1e9, StartWall: time.Unix(0, 0), Probes: []format.Probe{
		{Name: "rx", Kind: "uprobe", Spec: "u:./p:rx", Fields: []format.Field{{Name: "nc", Type: format.Uint64, Pointer: true}, {Name: "size", Type: format.Uint32}}},
	}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(&format.Event{Time: 2e9, PID: 1, TID: 1, Comm: []byte("p"), Ints: []uint64{0x7ffdbeef0010, 50000}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "events", path)
	if code != 0 || !strings.Contains(out, "nc=0x7ffdbeef0010 size=50000") {
		t.Errorf("events: exit %d, %s\n%s", code, errOut, out)
	}
}
