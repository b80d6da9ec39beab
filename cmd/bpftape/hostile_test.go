package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/hostile"
)

// TestHostileCaptures runs every analysis verb on each forged capture of
// package hostile: none may panic or exit with anything but a verb's own
// status, and each class is reported. Before, report and heatmap panicked
// on extreme times (index out of range [-63], makeslice: len out of
// range), and loss counts of 2^64-1, 2^64-1 and 2 printed "lost: 0"
// without a warning.
func TestHostileCaptures(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	for _, c := range hostile.Captures() {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(dir, c.Name+".arrow")
			if err := c.Write(path); err != nil {
				t.Fatal(err)
			}
			out := func(name string) string { return filepath.Join(dir, c.Name+"-"+name) }
			verbs := [][]string{
				{"info", path},
				{"info", "--json", path},
				{"events", path},
				{"hist", path, "req", "arg0"},
				{"hist", path, "req", "arg0", "--by", "comm"},
				{"latency", path, "req", "req_ret"},
				{"requests", path, "req", "arg0", "req_ret", "retval"},
				{"compare", path, "req", "arg0", "req_ret", "retval"},
				{"report", path, "-o", out("report.html"), "--latency", "req req_ret"},
				{"heatmap", path, "req", "arg0", "-o", out("events.svg")},
				{"heatmap", path, "--latency", "req", "req_ret", "-o", out("latency.svg")},
				{"export", path, "--format", "csv", "-o", out("x.csv")},
				{"export", path, "--format", "jsonl", "-o", out("x.jsonl")},
				{"export", path, "--format", "parquet", "-o", out("x.parquet")},
				{"export", path, "--format", "parquet", "--partition", "-o", out("parts")},
				{"export", path, "--format", "arrow", "-o", out("x.arrow")},
				{"repair", path, out("fixed.arrow")},
				{"stacks", path, "req"},
				{"stacks", "--text", "--offsets", path, "req"},
				{"stacks", "--offcpu", path, "req"},
				{"flamegraph", path, "req", "-o", out("flame.svg")},
			}
			for _, args := range verbs {
				r := runBin(t, exec.Command(bin, args...))
				if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") || r.code > exitDiffer {
					t.Errorf("%s (%s): %v: exit %d\n%s", c.Name, c.What, args, r.code, r.stderr)
					continue
				}
				switch {
				case strings.HasPrefix(c.Name, "times-") && (args[0] == "events" || args[0] == "latency" || args[0] == "report" || args[0] == "heatmap"):
					if !strings.Contains(r.stderr, "times are damaged or forged") {
						t.Errorf("%s: %v: no warning about the times\n%s", c.Name, args, r.stderr)
					}
				case c.Name == "corrupt-batch" && args[0] == "repair":
					if r.code != exitOK || !strings.Contains(r.stderr, "skipped batch 2") {
						t.Errorf("%s: repair: exit %d, want 0 and the corrupt batch skipped\n%s", c.Name, r.code, r.stderr)
					}
				case c.Name != "stacks-forged" && (args[0] == "stacks" || args[0] == "flamegraph"):
					// Refused before reading: the capture has no stacks.
					if r.code != exitUsage || !strings.Contains(r.stderr, "has no stacks") {
						t.Errorf("%s: %v: exit %d, want %d and no stacks\n%s", c.Name, args, r.code, exitUsage, r.stderr)
					}
				case c.Name == "corrupt-batch":
					// Every verb reads the damaged column: each must stop
					// there, not go on with changed values.
					if r.code != exitFailure || !strings.Contains(r.stderr, "batch 2") || !strings.Contains(r.stderr, "CRC") {
						t.Errorf("%s: %v: exit %d, want 1 and an error naming batch 2's checksum\n%s", c.Name, args, r.code, r.stderr)
					}
				case c.Name == "stacks-forged" && (args[0] == "stacks" || args[0] == "flamegraph") && args[1] != "--offcpu":
					if r.code != exitOK || strings.ContainsAny(r.stdout+r.stderr, "\x1b\a") {
						t.Errorf("%s: %v: exit %d, want 0 and every name escaped\n%s%s", c.Name, args, r.code, r.stdout, r.stderr)
					}
				case c.Name == "loss-wrap" && args[0] != "repair":
					if !strings.Contains(r.stderr+r.stdout, "18446744073709551615") {
						t.Errorf("%s: %v: the loss total does not saturate\n%s%s", c.Name, args, r.stdout, r.stderr)
					}
				}
			}
		})
	}
}
