package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bpftape/bpftape/replay/replaytest"
)

var (
	seedOnce sync.Once
	seedDir  string
	seedErr  error
)

// seedCaptures writes seed 000's synthetic captures once per test binary.
func seedCaptures(t *testing.T) string {
	t.Helper()
	seedOnce.Do(func() {
		seedDir, seedErr = os.MkdirTemp("", "bpftape-seed")
		if seedErr == nil {
			seedErr = replaytest.WriteSeed(seedDir)
		}
	})
	if seedErr != nil {
		t.Fatal(seedErr)
	}
	return seedDir
}

// The folders of the bpftape binary with its workload (bpftapeBin) and of
// the low-rate workload (slowWorkload), which the recording tests build
// on linux/amd64; TestMain removes them.
var binDir, slowDir string

// TestMain removes what the tests built once and shared: the seed
// captures, the bpftape binary with its workload, the low-rate workload.
func TestMain(m *testing.M) {
	foregroundChild()
	code := m.Run()
	for _, dir := range []string{seedDir, binDir, slowDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// seedTables returns the 11 histograms printed in seed 000, in order.
func seedTables(t *testing.T) []string {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed000", "bcc_histograms.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, block := range strings.Split(strings.Trim(string(data), "\n"), "\n\n") {
		tables = append(tables, block+"\n")
	}
	if len(tables) != 11 {
		t.Fatalf("seed file has %d tables, want 11", len(tables))
	}
	return tables
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// TestSeedHistograms checks that every histogram seed 000 prints comes out
// of bpftape line for line from a capture holding the seed's events.
func TestSeedHistograms(t *testing.T) {
	dir := seedCaptures(t)
	tables := seedTables(t)
	up := filepath.Join(dir, replaytest.UprobesFile)
	tp := filepath.Join(dir, replaytest.TracepointsFile)
	us := filepath.Join(dir, replaytest.USDTFile)
	for _, tc := range []struct {
		name  string
		args  []string
		table int
	}{
		{"rx entry size", []string{"hist", up, "rx", "arg2", "--label", "size"}, 0},
		{"rx return", []string{"hist", up, "rx_ret", "retval", "--label", "retSize"}, 1},
		{"tx packets", []string{"hist", up, "tx_ret", "retval", "--label", "num packets", "--cast", "s32"}, 2},
		{"vhost rx pkts", []string{"hist", tp, "vhost_rx", "recv_pkts", "--label", "recv pkts"}, 3},
		{"vhost rx len", []string{"hist", tp, "vhost_rx", "total_len", "--label", "total len"}, 4},
		{"vhost tx pkts", []string{"hist", tp, "vhost_tx", "sent_pkts", "--label", "sent pkts"}, 5},
		{"vhost tx len", []string{"hist", tp, "vhost_tx", "total_len", "--label", "total len"}, 6},
		{"usdt rx pkts", []string{"hist", us, "rx_end", "arg0", "--label", "recv pkts"}, 7},
		{"usdt rx len", []string{"hist", us, "rx_end", "arg1", "--label", "len"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out != tables[tc.table] {
				t.Errorf("got\n%s\nwant\n%s", out, tables[tc.table])
			}
		})
	}
	// The TX section is per-request totals: per-packet lengths summed on
	// each thread until virtio_net_flush_tx returns.
	out, errOut, code := runCLI(t, "requests", us, "tx_len", "arg0", "tx_flush", "retval", "--end-label", "sent pkts", "--total-label", "len")
	if code != 0 {
		t.Fatalf("requests: exit %d: %s", code, errOut)
	}
	want := tables[9] + "\n" + tables[10] + "\n436064 requests; 0 ends without items skipped; 0 incomplete requests (0 items) at the end of the capture\n"
	if out != want {
		t.Errorf("requests: got\n%s\nwant\n%s", out, want)
	}
	// With one global sum, as the seed's constant hash key, two threads'
	// interleaved requests mix and the totals no longer match.
	out, _, _ = runCLI(t, "requests", us, "tx_len", "arg0", "tx_flush", "retval", "--end-label", "sent pkts", "--total-label", "len", "--global")
	if strings.Contains(out, tables[10]) {
		t.Errorf("--global reproduced per-thread totals; the test capture does not interleave threads")
	}
	// RX entry and return histograms are identical.
	_, errOut, code = runCLI(t, "compare", up, "rx", "arg2", "rx_ret", "retval", "--identical")
	if code != 0 {
		t.Errorf("compare --identical: exit %d: %s", code, errOut)
	}
	_, _, code = runCLI(t, "compare", up, "rx", "arg2", "tx_ret", "retval", "--identical")
	if code != exitDiffer {
		t.Errorf("compare --identical of different histograms: exit %d, want %d", code, exitDiffer)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
