package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/replay"
)

// TestColumnSelection runs every analysis verb twice on captures with
// filters, windows, keys, merged hosts, loss records, strings and a
// missing footer: as it runs, decoding only the columns it asks for and
// taking what it can from the footer, and with every column of every batch
// decoded (BPFTAPE_DECODE_ALL). Output, notes and exit status must be the
// same: a verb that reads a column it did not ask for finds it empty, and
// prints something else or fails. (With stacks: TestColumnSelectionStacks.)
func TestColumnSelection(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	writeVnet(t, a, "hv-07", 30000)
	writeVnet(t, b, "hv-08", 30000)
	merged := filepath.Join(dir, "fleet.arrow")
	if _, errOut, code := runCLI(t, "merge", a, b, "-o", merged); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	// A killed recorder's file: a with its footer and last batches cut.
	cut := filepath.Join(dir, "cut.arrow")
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, data[:len(data)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	seeds := seedCaptures(t)

	var runs [][]string
	for _, f := range []string{a, cut} {
		runs = append(runs,
			[]string{"info", f},
			[]string{"count", f},
			[]string{"count", f, "--by", "comm"},
			[]string{"count", f, "--by", "tid", "--from", "10ms", "--to", "40ms"},
			[]string{"count", f, "--pid", "4242"},
			[]string{"count", f, "--comm", "qemu-system-x86", "--to", "30ms"},
			[]string{"hist", f, "rx", "arg2"},
			[]string{"hist", f, "rx", "arg2", "--comm", "qemu-system-x86"},
			[]string{"hist", f, "rx", "arg2", "--by", "tid", "--tid", "4243"},
			[]string{"hist", f, "rx", "arg2", "--interval", "10ms"},
			[]string{"hist", f, "rx", "arg2", "--by", "comm"},
			[]string{"hist", f, "rx", "arg2", "--by", "tid", "--stats"},
			[]string{"hist", f, "rx", "arg2", "--by", "pid", "--style", "bpftrace", "--json"},
			[]string{"hist", f, "rx", "arg2", "--by", "comm", "--linear", "0,2000,100", "--json"},
			[]string{"hist", f, "rx", "arg2", "--interval", "7ms", "--by", "tid", "--stats"},
			[]string{"hist", f, "rx", "arg2", "--interval", "10ms", "--by", "comm", "--json"},
			[]string{"latency", f, "rx", "rx_ret"},
			[]string{"latency", f, "rx", "rx_ret", "--by", "comm", "--pid", "4242"},
			[]string{"latency", f, "rx", "rx_ret", "--interval", "20ms", "-u"},
			[]string{"latency", f, "rx", "rx_ret", "--by", "comm"},
			[]string{"latency", f, "rx", "rx_ret", "--by", "tid", "-m", "--json"},
			[]string{"latency", f, "rx", "rx_ret", "--by", "pid", "--interval", "9ms", "--style", "bpftrace"},
			[]string{"latency", f, "rx", "rx_ret", "--style", "bpftrace"},
			[]string{"latency", f, "rx", "rx_ret", "--comm", "nosuch"},
			[]string{"latency", f, "rx", "rx_ret", "--tid", "4243", "--interval", "10ms", "--by", "comm"},
			[]string{"hist", f, "rx", "arg2", "--pid", "1", "--interval", "10ms"},
			[]string{"hist", f, "rx", "arg2", "--from", "5ms", "--to", "25ms", "--by", "comm"},
			[]string{"latency", f, "rx", "rx_ret", "-u"},
			[]string{"requests", f, "tx_len", "arg0", "tx_ret", "retval"},
			[]string{"requests", f, "tx_len", "arg0", "tx_ret", "retval", "--global"},
			[]string{"requests", f, "tx_len", "arg0", "tx_ret", "retval", "--pid", "4242", "--from", "3ms"},
			[]string{"requests", f, "tx_len", "arg0", "tx_ret", "retval", "--tid", "4243", "--json"},
			[]string{"requests", f, "tx_len", "arg0", "tx_ret", "retval", "--comm", "nosuch"},
			[]string{"requests", f, "tx_len", "arg0", "tx_ret", "retval", "--list", "--from", "5ms", "--to", "15ms"},
			[]string{"compare", f, "rx", "arg2", "rx_ret", "retval"},
			[]string{"compare", f, "rx", "arg2", "rx_ret", "retval", "--pid", "4242", "--json"},
			[]string{"compare", f, "rx", "arg2", "rx_ret", "retval", "--comm", "qemu-system-x86", "--from", "5ms", "--to", "25ms"},
			[]string{"compare", f, "rx", "arg2", "rx_ret", "retval", "--tid", "99999"},
			[]string{"compare", f, "rx", "arg2", "rx_ret", "retval", "--comm", "nosuch"},
			[]string{"events", f, "--to", "20ms"},
			[]string{"events", f, "--pid", "4242", "--comm", "qemu-system-x86", "--from", "5ms"},
			[]string{"events", f, "--tid", "99999"},
			[]string{"heatmap", f, "rx", "arg2", "-o", "-"},
			[]string{"heatmap", "--latency", f, "rx", "rx_ret", "-o", "-"},
			[]string{"heatmap", f, "rx", "arg2", "--pid", "4242", "--to", "20ms", "-o", "-"},
			[]string{"heatmap", "--latency", f, "rx", "rx_ret", "--tid", "4243", "-o", "-"},
			[]string{"report", f, "-o", "-", "--latency", "rx rx_ret", "--requests", "tx_len arg0 tx_ret retval", "--compare", "rx arg2 rx_ret retval"},
			[]string{"export", "-f", "csv", "-o", "-", f},
			[]string{"export", "-f", "parquet", "-o", "-", f},
			[]string{"export", "-f", "parquet", "--lost", "keep", "-o", "-", f},
		)
	}
	runs = append(runs,
		[]string{"info", merged},
		[]string{"count", merged, "--by", "comm"},
		[]string{"hist", merged, "rx", "arg2", "--by", "host"},
		[]string{"hist", merged, "rx", "arg2", "--by", "comm", "--interval", "10ms"},
		[]string{"latency", merged, "rx", "rx_ret"},
		[]string{"latency", merged, "rx", "rx_ret", "--by", "comm", "--interval", "10ms"},
		[]string{"latency", merged, "rx", "rx_ret", "--key", "host"},
		[]string{"heatmap", "--latency", merged, "rx", "rx_ret", "-o", "-"},
		[]string{"requests", merged, "tx_len", "arg0", "tx_ret", "retval", "--json"},
		[]string{"export", "-f", "parquet", "-o", "-", merged},
		[]string{"compare", a, cut, "rx", "arg2", "--tid", "4243"},
		[]string{"compare", a, cut, "rx", "arg2"},
		[]string{"compare", a, "rx", "arg2", merged, "rx_ret", "retval", "--json"},
		[]string{"compare", a, "rx", "arg2", merged, "rx", "arg2", "--from", "10ms", "--identical"},
	)
	for _, name := range []string{"uprobes", "tracepoints", "usdt"} {
		matches, _ := filepath.Glob(filepath.Join(seeds, "*"+name+"*"))
		for _, f := range matches {
			runs = append(runs, []string{"info", f}, []string{"count", f, "--by", "comm"}, []string{"report", f, "-o", "-"})
		}
	}
	checkEveryColumn(t, dir, runs)
}

// checkEveryColumn runs each of runs (a verb and its arguments) as it
// runs and with every column decoded (BPFTAPE_DECODE_ALL), and wants the
// same output, notes and exit status.
func checkEveryColumn(t *testing.T, dir string, runs [][]string) {
	for _, args := range runs {
		name := strings.Join(args, " ")
		t.Run(strings.ReplaceAll(name, dir+"/", ""), func(t *testing.T) {
			out, errOut, code := runCLI(t, args...)
			t.Setenv(replay.DecodeAllEnv, "1")
			outAll, errAll, codeAll := runCLI(t, args...)
			if code != codeAll || out != outAll || errOut != errAll {
				t.Errorf("selected columns: exit %d, %d bytes out, stderr %q\nevery column:     exit %d, %d bytes out, stderr %q\n%s",
					code, len(out), errOut, codeAll, len(outAll), errAll, firstDiff(out, outAll))
			}
			if len(out) == 0 {
				t.Errorf("no output (exit %d): %s", code, errOut)
			}
		})
	}
}
