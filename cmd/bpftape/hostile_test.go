//go:build linux && amd64

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/internal/testutil/hostile"
	"github.com/bpftape/bpftape/replay"
)

// Bounds on each verb's run over a forged capture: CPU time (user and
// system, which the machine's other work inflates less than wall time),
// peak memory, and a wall-clock limit past which the verb is taken to hang
// and is killed. They catch work that grows faster than the input (a
// search of 1 M mappings for each frame took minutes), not speed, which
// make bench measures: the slowest verb, a pprof export of 300 stacks of
// 1,024 frames in 1 M mappings, does linear work that took 3.9 to 5.9 s
// of CPU on a 2-CPU VM with nothing else running, and more beside other
// tests.
const (
	hostileCPU    = 10 * time.Second
	hostileMemory = 512 << 20
	hostileWall   = 30 * time.Second
)

// lowerPeak brings this process's peak RSS down to what it uses now. A
// child started by os/exec shares this process's memory until it execs,
// and Linux counts the peak of that memory in the child's: without this,
// forging a capture here would count against every verb run after it.
func lowerPeak(t *testing.T) {
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
}

// TestHostileCaptures runs every analysis verb on each forged capture of
// package hostile: none may panic, exit with anything but a verb's own
// status, or take more than the bounds above, and each class is reported.
// Before, report and heatmap panicked on extreme times (index out of range
// [-63], makeslice: len out of range), loss counts of 2^64-1, 2^64-1 and 2
// printed "lost: 0" without a warning, a 76 KB stack table ran info out of
// memory, and 1 M mappings made stacks search them for minutes.
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
			lowerPeak(t)
			verbs := [][]string{
				{"info", path},
				{"info", "--json", path},
				{"events", path},
				{"hist", path, "req", "arg0"},
				{"hist", path, "req", "arg0", "--by", "comm"},
				{"hist", path, "req", "arg0", "--by", "tid", "--interval", "1s"},
				{"latency", path, "req", "req_ret"},
				{"latency", path, "req", "req_ret", "--by", "comm", "--interval", "1s"},
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
				{"export", path, "--format", "pprof", "--probe", "req", "-o", out("x.pb.gz")},
				{"export", path, "--format", "pprof", "--weight", "latency", "--pair", "req,req_ret", "-o", out("lat.pb.gz")},
				{"export", path, "--format", "perfetto", "--pair", "req,req_ret", "-o", out("x.pftrace")},
			}
			for _, args := range verbs {
				// A pprof export reads stacks as the stacks verb does.
				stackVerb := args[0] == "stacks" || args[0] == "flamegraph" || args[0] == "export" && slices.Contains(args, "pprof")
				ctx, cancel := context.WithTimeout(context.Background(), hostileWall)
				r := runBin(t, exec.CommandContext(ctx, bin, args...))
				cancel()
				if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") || r.code > exitDiffer {
					t.Errorf("%s (%s): %v: exit %d\n%s", c.Name, c.What, args, r.code, r.stderr)
					continue
				}
				if r.cpu > hostileCPU || r.maxRSS > hostileMemory {
					t.Errorf("%s (%s): %v: %v of CPU and %d MiB, want at most %v and %d MiB", c.Name, c.What, args,
						r.cpu.Round(time.Millisecond), r.maxRSS>>20, hostileCPU, hostileMemory>>20)
				}
				switch {
				case strings.HasPrefix(c.Name, "times-") && (args[0] == "events" || args[0] == "latency" || args[0] == "report" || args[0] == "heatmap"):
					if !strings.Contains(r.stderr, "times are damaged or forged") {
						t.Errorf("%s: %v: no warning about the times\n%s", c.Name, args, r.stderr)
					}
				case c.Name == "corrupt-batch" && args[0] == "repair":
					if r.code != exitOK || !strings.Contains(r.stderr, "skipped batch 2") ||
						!strings.Contains(r.stderr, "WARNING: left out 1 corrupt batch of 4096 events (req 2048, req_ret 2048)") {
						t.Errorf("%s: repair: exit %d, want 0 and the corrupt batch skipped\n%s", c.Name, r.code, r.stderr)
					}
				case (c.Name == "stacks-bomb" || c.Name == "stacks-parts") && (args[0] == "stacks" && args[1] != "--offcpu" || args[0] == "flamegraph" || strings.Contains(r.stderr, "stack table")):
					// Over a stack table limit: refused, saying which.
					if r.code != exitFailure || !strings.Contains(r.stderr, "stack table") || !strings.Contains(r.stderr, "format.Max") {
						t.Errorf("%s: %v: exit %d, want %d and the stack table limit named\n%s", c.Name, args, r.code, exitFailure, r.stderr)
					}
				case (c.Name == "stacks-merge" || c.Name == "stacks-maps" || c.Name == "stacks-kernel") &&
					(args[0] == "info" || args[0] == "flamegraph" || args[0] == "export" || args[0] == "report" || args[0] == "stacks" && args[1] != "--offcpu"):
					if r.code != exitOK {
						t.Errorf("%s: %v: exit %d, want 0\n%s", c.Name, args, r.code, r.stderr)
					}
				case c.Name == "partitions" && args[0] == "export" && args[len(args)-1] == out("parts"):
					// One file a partition: host=forged/probe=NAME/part-0.parquet.
					files, _ := filepath.Glob(filepath.Join(out("parts"), "*", "*", "*"))
					if r.code != exitOK || len(files) != 65 {
						t.Errorf("%s: %v: exit %d and %d files, want 0 and 65\n%s", c.Name, args, r.code, len(files), r.stderr)
					}
				case c.Name != "bidi" && !strings.HasPrefix(c.Name, "stacks-") && stackVerb:
					// Refused before reading: the capture has no stacks.
					if r.code != exitUsage || !strings.Contains(r.stderr, "has no stacks") {
						t.Errorf("%s: %v: exit %d, want %d and no stacks\n%s", c.Name, args, r.code, exitUsage, r.stderr)
					}
				case c.Name == "corrupt-batch" && args[0] == "info":
					// info answers from the footer, reading no batch.
					if r.code != exitOK {
						t.Errorf("%s: %v: exit %d, want 0 (the footer's counts)\n%s", c.Name, args, r.code, r.stderr)
					}
				case c.Name == "corrupt-batch":
					// A verb that reads the damaged column must stop there,
					// not go on with changed values; one that does not read
					// it answers from the columns it reads, each verified.
					// Then reading every column must fail: the damage is
					// in one it left out.
					if r.code == exitOK {
						ctx, cancel := context.WithTimeout(context.Background(), hostileWall)
						again := slices.Clone(args)
						for k, a := range again {
							if strings.HasPrefix(a, out("")) {
								again[k] = a + "-all" // a file of its own: none is overwritten
							}
						}
						cmd := exec.CommandContext(ctx, bin, again...)
						cmd.Env = append(os.Environ(), replay.DecodeAllEnv+"=1")
						all := runBin(t, cmd)
						cancel()
						if all.code != exitFailure || !strings.Contains(all.stderr, "batch 2") {
							t.Errorf("%s: %v: exit 0, and with every column decoded exit %d: want 1 naming batch 2\n%s", c.Name, args, all.code, all.stderr)
						}
					} else if r.code != exitFailure || !strings.Contains(r.stderr, "batch 2") || !strings.Contains(r.stderr, "CRC") ||
						(args[0] != "repair") != strings.Contains(r.stderr, "'bpftape repair' copies the batches that are intact") {
						t.Errorf("%s: %v: exit %d, want 1 and an error naming batch 2's checksum (and repair), or 0\n%s", c.Name, args, r.code, r.stderr)
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
