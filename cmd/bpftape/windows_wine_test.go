//go:build interop && linux && amd64

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// wineWall bounds one run of the Windows binary under Wine (and of
// wineboot), past which it is taken to hang.
const wineWall = 90 * time.Second

// wineTools finds Wine's 64-bit loader, wineserver and the MinGW-w64
// cross-compiler (Debian's wine64 and gcc-mingw-w64-x86-64, which
// scripts/deps.sh installs); without them the test skips, or fails if
// Strict.
func wineTools(t *testing.T) (wine64, wineserver, mingw string) {
	t.Helper()
	look := func(pkg string, names ...string) string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
		}
		testutil.Unavailable(t, "no %s (Debian's %s; scripts/deps.sh installs it)", names[0], pkg)
		return ""
	}
	// Debian puts wine64 in /usr/lib/wine, behind the /usr/bin/wine script.
	wine64 = look("wine64", "wine64", "/usr/lib/wine/wine64")
	wineserver = look("wine64", "wineserver", "/usr/lib/wine/wineserver")
	mingw = look("gcc-mingw-w64-x86-64", "x86_64-w64-mingw32-gcc")
	return wine64, wineserver, mingw
}

// wineCase is one command run by both binaries. Its arguments name the
// captures as ../../caps/NAME and its outputs as relative paths: each side
// runs it in a folder of its own, root/lin/NAME or root/win/NAME.
type wineCase struct {
	name string
	args []string
	// same is false for the cases whose Windows output differs by design
	// (--help), which check it themselves.
	same bool
}

// sideResult is what one binary did in a case: its exit status, and the
// files of its standard output and error.
type sideResult struct {
	code           int
	stdout, stderr string // paths
}

// TestWindowsBinaryUnderWine builds bpftape for windows/amd64 and for this
// host, runs every analysis verb with the flags users give them on the
// same captures (seed 000's, the chain workload's user stacks, forged
// ones) under Wine and natively, each in its own folder with the same
// relative paths, and requires the same exit status, standard output,
// standard error and files written, byte for byte: no "\r\n", no
// backslashes, no other float or time formatting, no other errors. The
// only differences allowed are by design: the recording verbs refuse on
// Windows in one line with exit status 2, and --help says so. Then the
// rules of -o (package outfile) under Wine: an existing file is refused
// and kept without --force, a failure leaves no temporary file, --force
// replaces.
//
// Wine 8.0 (Debian 12's) lacks bcryptprimitives.dll, which Go programs
// load at start; the test builds a stand-in (testdata/wine) into a fresh
// WINEPREFIX of its own, and stops that prefix's wineserver and processes
// at the end.
func TestWindowsBinaryUnderWine(t *testing.T) {
	wine64, wineserver, mingw := wineTools(t)
	start := time.Now()
	root := t.TempDir()
	bin, caps, prefix := filepath.Join(root, "bin"), filepath.Join(root, "caps"), filepath.Join(root, "wine")
	for _, d := range []string{bin, caps, prefix} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, linux := filepath.Join(bin, "bpftape.exe"), filepath.Join(bin, "bpftape")

	wineEnv := append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all",
		// No Mono or Gecko installers, no menu entries, no display.
		"WINEDLLOVERRIDES=mscoree,mshtml,winemenubuilder.exe=d", "DISPLAY=")
	t.Cleanup(func() { stopWine(t, wineserver, prefix, wineEnv) })

	// The builds, the prefix and the seed captures, at the same time.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	goDo := func(i int, f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	goDo(0, func() error {
		return command(exec.Command("go", "build", "-o", exe, "."), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	})
	goDo(1, func() error {
		return command(exec.Command("go", "build", "-o", linux, "."), "CGO_ENABLED=0")
	})
	goDo(2, func() error { return winePrefix(wine64, wineserver, mingw, prefix, bin, wineEnv) })
	goDo(3, func() error { return replaytest.WriteSeed(caps) })
	// A user-stack capture: the chain workload, recorded here (on the
	// test's goroutine: it may skip or fail the test).
	chain := ""
	if testutil.Strict() || os.Geteuid() == 0 && bpf.CheckFeatures() == nil {
		recordChain(t, caps, 2000)
		chain = "leaf.arrow"
	} else {
		t.Log("no BPF here: the cases on a recorded capture with user stacks are left out")
	}
	for _, name := range []string{"corrupt-batch", "stacks-forged"} {
		if err := hostile.Named(name).Write(filepath.Join(caps, name+".arrow")); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built, prefix made and captured in %v", time.Since(start).Round(time.Millisecond))

	run := func(dir string, args []string, windows bool, out string) (sideResult, error) {
		r := sideResult{stdout: out + ".stdout", stderr: out + ".stderr"}
		ctx, cancel := context.WithTimeout(context.Background(), wineWall)
		defer cancel()
		var cmd *exec.Cmd
		if windows {
			cmd = exec.CommandContext(ctx, wine64, append([]string{exe}, args...)...)
			cmd.Env = wineEnv
		} else {
			cmd = exec.CommandContext(ctx, linux, args...)
			cmd.Env = os.Environ()
		}
		cmd.Dir = dir
		cmd.WaitDelay = 5 * time.Second
		o, err := os.Create(r.stdout)
		if err != nil {
			return r, err
		}
		defer o.Close()
		e, err := os.Create(r.stderr)
		if err != nil {
			return r, err
		}
		defer e.Close()
		cmd.Stdout, cmd.Stderr = o, e
		err = cmd.Run()
		var exit *exec.ExitError
		switch {
		case ctx.Err() != nil:
			return r, fmt.Errorf("%v: still running after %v", args, wineWall)
		case errors.As(err, &exit):
			r.code = exit.ExitCode()
		case err != nil:
			return r, err
		}
		return r, nil
	}
	// both runs c on each side, in root/lin/NAME and root/win/NAME
	// (made empty unless keep), at the same time.
	both := func(c wineCase, keep bool) (lin, win sideResult, linDir, winDir string) {
		t.Helper()
		linDir, winDir = filepath.Join(root, "lin", c.name), filepath.Join(root, "win", c.name)
		var lerr, werr error
		for _, d := range []string{linDir, winDir} {
			if !keep {
				os.RemoveAll(d)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); lin, lerr = run(linDir, c.args, false, linDir) }()
		win, werr = run(winDir, c.args, true, winDir)
		wg.Wait()
		if lerr != nil || werr != nil {
			t.Fatalf("%s: linux: %v; windows: %v", c.name, lerr, werr)
		}
		return lin, win, linDir, winDir
	}
	// compare reports every difference between the two sides of c (or,
	// quiet, only says whether there is one).
	compare := func(c wineCase, lin, win sideResult, linDir, winDir string, quiet bool) bool {
		t.Helper()
		var diffs []string
		if lin.code != win.code {
			diffs = append(diffs, fmt.Sprintf("exit status %d on Linux, %d under Wine", lin.code, win.code))
		}
		for _, f := range [][2]string{{lin.stdout, win.stdout}, {lin.stderr, win.stderr}} {
			if d := sameFile(f[0], f[1]); d != "" {
				diffs = append(diffs, filepath.Ext(f[0])[1:]+": "+d)
			}
		}
		diffs = append(diffs, sameTree(linDir, winDir)...)
		if len(diffs) > 0 && quiet {
			return false
		}
		if len(diffs) > 0 {
			if e := head(lin.stderr); e != "" {
				diffs = append(diffs, "stderr on Linux:\n"+e)
			}
			t.Errorf("%s: bpftape %s: Windows differs from Linux:\n\t%s", c.name, strings.Join(c.args, " "), strings.Join(diffs, "\n\t"))
			return false
		}
		return true
	}

	cases := wineCases(chain)
	same, helps := 0, 0
	for _, c := range cases {
		lin, win, linDir, winDir := both(c, false)
		if c.same {
			noise := wineNoise(win.stderr) || win.code != 0 && empty(win.stdout) && empty(win.stderr)
			ok := compare(c, lin, win, linDir, winDir, noise)
			if !ok && noise {
				// Wine's own complaint on stderr, not bpftape's (on a
				// loaded machine, "wine client error:...: sendmsg: Socket
				// operation on non-socket" now and then), or a failure
				// with nothing printed, which bpftape never does (once in
				// a make test run, info exited 1 so, and passed in the
				// next 3 runs): once more.
				lin, win, linDir, winDir = both(c, false)
				ok = compare(c, lin, win, linDir, winDir, false)
			}
			if ok {
				same++
			}
		} else {
			checkHelp(t, c, lin, win)
			helps++
		}
		// What was compared goes: the seed exports are hundreds of MB.
		for _, p := range []string{linDir, winDir, lin.stdout, lin.stderr, win.stdout, win.stderr} {
			os.RemoveAll(p)
		}
	}

	// The recording verbs refuse on Windows, whatever their arguments.
	for _, args := range [][]string{
		{"record", "-o", "x.arrow", "-d", "1s", "profile:hz:49"},
		{"record", "--help"},
		{"list", "-v", "../../caps"},
		{"doctor"},
	} {
		c := wineCase{name: "refuse-" + args[0] + strconv.Itoa(len(args)), args: args}
		_, win, _, winDir := both(c, false)
		want := fmt.Sprintf("bpftape %s: recording needs Linux on x86-64 or arm64 (linux/amd64, linux/arm64); this is a windows/amd64 build, which analyses captures: 'bpftape --help' lists its verbs\n", args[0])
		if got := readText(t, win.stderr) + readText(t, win.stdout); win.code != exitUsage || got != want {
			t.Errorf("windows: bpftape %s: exit %d, output\n%q\nwant exit %d and\n%q", strings.Join(args, " "), win.code, got, exitUsage, want)
		}
		if files, _ := os.ReadDir(winDir); len(files) > 0 {
			t.Errorf("windows: bpftape %s wrote %d files", strings.Join(args, " "), len(files))
		}
	}

	// The output rules, under Wine as on Linux.
	safety(t, chain, both, func(c wineCase, lin, win sideResult, linDir, winDir string) bool {
		return compare(c, lin, win, linDir, winDir, false)
	})

	t.Logf("%d of %d cases the same on both, %d that print the help checked, in %v in all", same, len(cases)-helps, helps, time.Since(start).Round(time.Millisecond))
}

// wineCases are the cases that /tmp/xos/cases.sh compared by hand: every
// analysis verb with its usual flags, on seed 000's captures, on the chain
// capture (when chain is not ""), and on forged captures, where each verb
// must fail (or escape) the same way on both.
func wineCases(chain string) []wineCase {
	const capDir = "../../caps/"
	U, T, D := capDir+replaytest.UprobesFile, capDir+replaytest.TracepointsFile, capDir+replaytest.USDTFile
	var cs []wineCase
	add := func(name string, args ...string) { cs = append(cs, wineCase{name, args, true}) }
	cs = append(cs, wineCase{"help", []string{"--help"}, false})
	add("version", "--version")
	// No verb, or an unknown one: the help on stderr.
	cs = append(cs, wineCase{"noargs", nil, false}, wineCase{"unknown", []string{"nosuchverb", U}, false})
	add("hist-help", "hist", "--help")
	add("export-help", "export", "--help")
	add("badflag", "stacks", "--nosuchflag", U)

	inputs := []string{U, T, D}
	if chain != "" {
		inputs = append(inputs, capDir+chain)
	}
	for i, f := range inputs {
		n := strconv.Itoa(i + 1)
		// The seed captures' 2-3 million events make CSV and JSON lines of
		// 45-220 MB: one second of them is enough.
		window := []string{"--to", "1s"}
		if f == capDir+chain {
			window = nil
		}
		add("info"+n, "info", f)
		add("infojson"+n, "info", "--json", f)
		add("count"+n, "count", f)
		add("countcomm"+n, "count", "--by", "comm", f)
		add("csv"+n, append([]string{"export", "-f", "csv", f}, window...)...)
		add("csvfile"+n, append([]string{"export", "-f", "csv", "-o", "out.csv", f}, window...)...)
		add("jsonl"+n, append([]string{"export", "-f", "jsonl", "-o", "out.jsonl", f}, window...)...)
		add("parquet"+n, "export", "-f", "parquet", "-o", "out.parquet", f)
		add("arrow"+n, "export", "-f", "arrow", "-o", "out.arrow", f)
		add("redact"+n, "export", "-f", "arrow", "--redact", "-o", "out.arrow", f)
	}
	add("hist-u1", "hist", U, "rx", "arg2")
	add("hist-u2", "hist", U, "tx_ret", "retval")
	add("hist-u3", "hist", "--json", U, "rx", "arg2")
	add("hist-u4", "hist", U, "rx", "arg2", "--by", "comm")
	add("hist-t1", "hist", T, "vhost_rx", "total_len")
	add("hist-d1", "hist", D, "tx_len", "arg0")
	add("hist-nofield", "hist", U, "rx", "nosuchfield")
	add("lat-u", "latency", U, "rx", "rx_ret")
	add("req-u", "requests", U, "rx", "arg2", "rx_ret", "retval")
	add("cmp-u", "compare", U, "rx", "arg2", "rx_ret", "retval")
	add("events-u", "events", U, "rx", "--to", "5ms")
	add("heat-u", "heatmap", U, "rx", "arg2", "-o", "heat.svg")
	add("heatlat-u", "heatmap", "--latency", U, "rx", "rx_ret", "-o", "lat.svg")
	add("report-u", "report", U, "-o", "report.html")
	add("merge", "merge", "-o", "merged.arrow", U, T)
	add("hive", "export", "-f", "parquet", "--partition", "-o", "parts", U)
	add("exists", "export", "-f", "csv", "-o", T, U)
	add("nostacks", "stacks", U, "rx")
	if chain != "" {
		C := capDir + chain
		add("events-c", "events", C, "leaf")
		add("stacks-c", "stacks", C, "leaf")
		add("stacks-cb", "stacks", "--by", "comm", C, "leaf")
		add("stacks-ct", "stacks", "--text", C, "leaf")
		add("stacks-co", "stacks", "--text", "--offsets", C, "leaf")
		add("stacks-ck", "stacks", "--kernel", C, "leaf")
		add("offcpu", "stacks", "--offcpu", C)
		add("fg-c", "flamegraph", C, "leaf", "-o", "flame.svg")
		add("fg-diff", "flamegraph", C, "leaf", "--base", C, "-o", "diff.svg")
		add("report-c", "report", C, "-o", "report.html")
		add("repair", "repair", C, "fixed.arrow")
		add("redactcsv", "export", "-f", "csv", "--redact", C)
		add("hist-c1", "hist", C, "leaf", "arg1")
	}
	// The forged captures, through every verb (hostile_test.go's list).
	for _, name := range []string{"corrupt-batch", "stacks-forged"} {
		H := capDir + name + ".arrow"
		for i, args := range [][]string{
			{"info", H},
			{"info", "--json", H},
			{"count", H},
			{"events", H},
			{"hist", H, "req", "arg0"},
			{"hist", H, "req", "arg0", "--by", "comm"},
			{"latency", H, "req", "req_ret"},
			{"requests", H, "req", "arg0", "req_ret", "retval"},
			{"compare", H, "req", "arg0", "req_ret", "retval"},
			{"report", H, "-o", "report.html", "--latency", "req req_ret"},
			{"heatmap", H, "req", "arg0", "-o", "events.svg"},
			{"heatmap", H, "--latency", "req", "req_ret", "-o", "latency.svg"},
			{"export", H, "--format", "csv", "-o", "x.csv"},
			{"export", H, "--format", "jsonl", "-o", "x.jsonl"},
			{"export", H, "--format", "parquet", "-o", "x.parquet"},
			{"export", H, "--format", "parquet", "--partition", "-o", "parts"},
			{"export", H, "--format", "arrow", "-o", "x.arrow"},
			{"merge", "-o", "merged.arrow", H, U},
			{"repair", H, "fixed.arrow"},
			{"stacks", H, "req"},
			{"stacks", "--text", "--offsets", H, "req"},
			{"stacks", "--offcpu", H, "req"},
			{"flamegraph", H, "req", "-o", "flame.svg"},
		} {
			add(fmt.Sprintf("%s-%02d-%s", name, i, args[0]), args...)
		}
	}
	return cs
}

// checkHelp checks a case that prints bpftape's help (--help; on stderr,
// no verb or an unknown one): on Windows, Linux's output with the
// recording verbs' summaries saying that they need Linux, and the same exit
// status.
func checkHelp(t *testing.T, c wineCase, lin, win sideResult) {
	t.Helper()
	windows := func(text string) string {
		for _, v := range recordingVerbs {
			line := fmt.Sprintf("  %-9s %s\n", v.name, v.summary)
			text = strings.Replace(text, line, fmt.Sprintf("  %-9s %s\n", v.name, v.summary+" (needs Linux on x86-64 or arm64, linux/amd64, linux/arm64: not in this windows/amd64 build)"), 1)
		}
		return text
	}
	linOut, linErr := readText(t, lin.stdout), readText(t, lin.stderr)
	if !strings.Contains(linOut+linErr, "\n  record    "+recordSummary+"\n") {
		t.Fatalf("linux: bpftape %s: no line for record in\n%s%s", strings.Join(c.args, " "), linOut, linErr)
	}
	winOut, winErr := readText(t, win.stdout), readText(t, win.stderr)
	if win.code != lin.code || winOut != windows(linOut) || winErr != windows(linErr) {
		t.Errorf("windows: bpftape %s: exit %d (Linux %d), stdout\n%s\nstderr\n%s\nwant stdout\n%s\nstderr\n%s", strings.Join(c.args, " "),
			win.code, lin.code, winOut, winErr, windows(linOut), windows(linErr))
	}
}

// safety checks the rules of -o under Wine, and that Linux does the same:
// an existing file is refused without --force and left as it was, a
// failure leaves no file behind (no temporary file either, with or without
// --force), and --force replaces.
func safety(t *testing.T, chain string, both func(wineCase, bool) (sideResult, sideResult, string, string),
	compare func(wineCase, sideResult, sideResult, string, string) bool) {
	t.Helper()
	good := "../../caps/" + replaytest.TracepointsFile
	if chain != "" {
		good = "../../caps/" + chain
	}
	const bad = "../../caps/corrupt-batch.arrow"
	const old = "an existing file\n"
	_, _, linDir, winDir := both(wineCase{name: "safety", args: []string{"--version"}}, false)
	for _, d := range []string{linDir, winDir} {
		if err := os.WriteFile(filepath.Join(d, "exists.csv"), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	step := func(name string, wantCode int, args ...string) (linDir, winDir string) {
		t.Helper()
		c := wineCase{name: "safety", args: args, same: true}
		lin, win, linDir, winDir := both(c, true)
		compare(wineCase{name: "safety: " + name, args: args}, lin, win, linDir, winDir)
		if win.code != wantCode {
			t.Errorf("windows: safety: %s: bpftape %s: exit %d, want %d\n%s", name, strings.Join(args, " "), win.code, wantCode, head(win.stderr))
		}
		// Only the files this test put there, and exists.csv.
		files, err := os.ReadDir(winDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Name() != "exists.csv" && f.Name() != "out.csv" {
				t.Errorf("windows: safety: %s: bpftape %s left %s", name, strings.Join(args, " "), f.Name())
			}
		}
		return linDir, winDir
	}
	content := func(dir, name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return "(none)"
		} else if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	_, winDir = step("existing, no --force", exitUsage, "export", "-f", "csv", "-o", "exists.csv", good)
	if got := content(winDir, "exists.csv"); got != old {
		t.Errorf("windows: safety: export over an existing file without --force changed it to %.100q", got)
	}
	_, winDir = step("failure", exitFailure, "export", "-f", "csv", "-o", "out.csv", bad)
	if got := content(winDir, "out.csv"); got != "(none)" {
		t.Errorf("windows: safety: a failed export left out.csv: %.100q", got)
	}
	_, winDir = step("failure with --force", exitFailure, "export", "--force", "-f", "csv", "-o", "exists.csv", bad)
	if got := content(winDir, "exists.csv"); got != old {
		t.Errorf("windows: safety: a failed export --force changed the existing file to %.100q", got)
	}
	linDir, winDir = step("--force", exitOK, "export", "--force", "-f", "csv", "-o", "exists.csv", good)
	if got := content(winDir, "exists.csv"); got == old || got != content(linDir, "exists.csv") {
		t.Errorf("windows: safety: export --force did not replace the file: %.100q", got)
	}
}

// winePrefix starts the prefix's wineserver, made to stay until stopWine
// stops it (otherwise it exits a moment after its last client, and a run
// that starts then fails with "wine client error: recvmsg: Connection
// reset by peer"), makes a WINEPREFIX at prefix and, when its Wine lacks
// bcryptprimitives.dll, builds testdata/wine's stand-in into its system32.
func winePrefix(wine64, wineserver, mingw, prefix, tmp string, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), wineWall)
	defer cancel()
	// A file, not a pipe: wineserver and the services wineboot starts
	// keep their output open after the commands return.
	log, err := os.Create(filepath.Join(tmp, "wine.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	for _, args := range [][]string{{wineserver, "-p"}, {wine64, "wineboot", "--init"}} {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			out, _ := os.ReadFile(log.Name())
			return fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	sys32 := filepath.Join(prefix, "drive_c", "windows", "system32")
	dll := filepath.Join(sys32, "bcryptprimitives.dll")
	if _, err := os.Stat(dll); err == nil {
		return nil // a Wine that has it (9.0 and later)
	} else if _, err := os.Stat(sys32); err != nil {
		return fmt.Errorf("wineboot made no system32: %w", err)
	}
	src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "wine", "bcryptprimitives.c"))
	if err != nil {
		return err
	}
	built := filepath.Join(tmp, "bcryptprimitives.dll")
	if err := command(exec.Command(mingw, "-shared", "-O2", "-Wall", "-Werror", "-o", built, src, "-lbcrypt")); err != nil {
		return err
	}
	data, err := os.ReadFile(built)
	if err != nil {
		return err
	}
	return os.WriteFile(dll, data, 0o644)
}

// stopWine stops the prefix's wineserver and every Wine process of it, and
// fails the test if one is left.
func stopWine(t *testing.T, wineserver, prefix string, env []string) {
	kill := exec.Command(wineserver, "-k")
	kill.Env = env
	kill.Run() // fails when no wineserver runs: nothing to stop
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = wineProcesses(prefix)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Errorf("wineserver -k left Wine processes of %s running: %v", prefix, left)
}

// wineProcesses lists the processes with WINEPREFIX=prefix in their
// environment, as "PID NAME".
func wineProcesses(prefix string) []string {
	want := []byte("\x00WINEPREFIX=" + prefix + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var found []string
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		dir := filepath.Dir(p)
		if stat, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
				continue // a zombie its parent has not reaped: gone
			}
		}
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		found = append(found, filepath.Base(dir)+" "+strings.TrimSpace(string(comm)))
	}
	return found
}

// command runs cmd with env added to this process's environment, and
// returns its output in the error if it fails.
func command(cmd *exec.Cmd, env ...string) error {
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(append(env, cmd.Args...), " "), err, out)
	}
	return nil
}

// sameFile compares two files byte for byte, returning "" or where they
// first differ.
func sameFile(a, b string) string {
	fa, err := os.Open(a)
	if err != nil {
		return err.Error()
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err.Error()
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); ; {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		n := min(na, nb)
		for i := 0; i < n; i++ {
			if ba[i] != bb[i] {
				lo, hi := max(0, i-40), min(n, i+40)
				return fmt.Sprintf("byte %d differs: Linux %q, Windows %q", off+int64(i), ba[lo:hi], bb[lo:hi])
			}
		}
		if na != nb {
			side, more := "Linux", ba[n:na]
			if nb > na {
				side, more = "Windows", bb[n:nb]
			}
			return fmt.Sprintf("%s's is longer, from byte %d: %.80q", side, off+int64(n), more)
		}
		off += int64(n)
		if ea != nil || eb != nil {
			if ea != eb && (ea == nil || eb == nil) {
				return fmt.Sprintf("sizes differ at byte %d", off)
			}
			return ""
		}
	}
}

// sameTree compares the files two cases' folders hold: the same names,
// kinds and bytes.
func sameTree(a, b string) []string {
	list := func(dir string) map[string]fs.FileMode {
		m := map[string]fs.FileMode{}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != dir {
				rel, _ := filepath.Rel(dir, p)
				m[filepath.ToSlash(rel)] = d.Type()
			}
			return nil
		})
		return m
	}
	la, lb := list(a), list(b)
	var names []string
	for n := range la {
		names = append(names, n)
	}
	for n := range lb {
		if _, ok := la[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var diffs []string
	for _, n := range names {
		ta, oka := la[n]
		tb, okb := lb[n]
		switch {
		case !oka:
			diffs = append(diffs, "only Windows wrote "+n)
		case !okb:
			diffs = append(diffs, "only Linux wrote "+n)
		case ta != tb:
			diffs = append(diffs, fmt.Sprintf("%s: a %v on Linux, a %v on Windows", n, ta, tb))
		case ta.IsRegular():
			if d := sameFile(filepath.Join(a, n), filepath.Join(b, n)); d != "" {
				diffs = append(diffs, n+": "+d)
			}
		}
	}
	return diffs
}

func readText(t *testing.T, path string) string { return string(readAll(t, path)) }

// wineNoise reports whether the stderr file at path holds a complaint of
// Wine's own, which a run under Wine may print on a loaded machine.
func wineNoise(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), "wine client error:")
}

// empty reports whether the file at path is empty.
func empty(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Size() == 0
}

// head returns the first 2 KB of a file, for messages.
func head(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	b := make([]byte, 2048)
	n, _ := io.ReadFull(f, b)
	return string(b[:n])
}
