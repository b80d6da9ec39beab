//go:build linux && amd64

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// The output rules (package internal/outfile), verb by verb.

// writerVerbs are the verbs that write a file: args runs one with input in
// (a vnet capture), a second capture in2 and output out.
var writerVerbs = []struct {
	name string
	args func(in, in2, out string) []string
}{
	{"export csv", func(in, _, out string) []string { return []string{"export", in, "--format", "csv", "-o", out} }},
	{"export jsonl", func(in, _, out string) []string { return []string{"export", in, "-f", "jsonl", "-o", out} }},
	{"export arrow", func(in, _, out string) []string { return []string{"export", in, "--format", "arrow", "-o", out} }},
	{"export parquet", func(in, _, out string) []string { return []string{"export", in, "--format", "parquet", "-o", out} }},
	{"report", func(in, _, out string) []string { return []string{"report", in, "-o", out} }},
	{"heatmap", func(in, _, out string) []string { return []string{"heatmap", in, "rx", "arg2", "-o", out} }},
	{"merge", func(in, in2, out string) []string { return []string{"merge", in, in2, "-o", out} }},
	{"repair", func(in, _, out string) []string { return []string{"repair", in, out} }},
	{"repair -o", func(in, _, out string) []string { return []string{"repair", in, "-o", out} }},
}

// outputDir makes a folder with two small captures in it.
func outputDir(t *testing.T) (dir, in, in2 string) {
	dir = t.TempDir()
	in, in2 = filepath.Join(dir, "in.arrow"), filepath.Join(dir, "in2.arrow")
	writeVnet(t, in, "host-a", 3000)
	writeVnet(t, in2, "host-b", 1000)
	return dir, in, in2
}

// names lists dir (not recursively), to see what a command left there.
func names(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, e := range es {
		s = append(s, e.Name())
	}
	return strings.Join(s, " ")
}

// TestOutputIsInput: an output that is an input, by any name (the same
// path, another spelling, a hard link), is refused with exit 2, even with
// --force, and the input is intact. Before, export --to arrow, report and
// heatmap emptied or replaced their own input.
func TestOutputIsInput(t *testing.T) {
	dir, in, in2 := outputDir(t)
	want := readAll(t, in)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.arrow")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	before := names(t, dir)
	for _, v := range writerVerbs {
		for _, out := range []string{in, filepath.Join(dir, ".", "in.arrow"), filepath.Join(dir, "sub", "..", "in.arrow"), hard} {
			for _, force := range []bool{false, true} {
				args := v.args(in, in2, out)
				if force {
					args = append(args, "--force")
				}
				_, errOut, code := runCLI(t, args...)
				if code != exitUsage || !strings.Contains(errOut, "is the input") {
					t.Errorf("%s -o %s (force %v): exit %d, %q; want %d, \"is the input\"", v.name, out, force, code, errOut, exitUsage)
				}
				if !bytes.Equal(readAll(t, in), want) {
					t.Fatalf("%s -o %s: the input changed", v.name, out)
				}
			}
		}
	}
	if after := names(t, dir); after != before {
		t.Errorf("the folder held %q, now %q", before, after)
	}
}

// mknod makes a character device node in dir: 1,3 is /dev/null, 1,7 is
// /dev/full, on which every write fails with ENOSPC.
func mknod(t *testing.T, dir, name string, minor uint32) string {
	t.Helper()
	testutil.RequireRoot(t, "mknod")
	p := filepath.Join(dir, name)
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(1<<8|minor)); err != nil {
		t.Fatal(err)
	}
	return p
}

func isCharDevice(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// TestOutputDevice: a device as the output is written in place and never
// removed, also when the command fails: before, a failing
// 'report -o /dev/null' deleted /dev/null. It uses private nodes: a
// /dev/null (the failure is a probe name the capture lacks, exit 2) and a
// /dev/full (every write fails, exit 1).
func TestOutputDevice(t *testing.T) {
	dir, in, in2 := outputDir(t)
	null := mknod(t, dir, "null", 3)
	full := mknod(t, dir, "full", 7)
	before := names(t, dir)
	for _, v := range writerVerbs {
		_, errOut, code := runCLI(t, v.args(in, in2, full)...)
		if code != exitFailure || !strings.Contains(errOut, "no space left") {
			t.Errorf("%s -o full: exit %d, %q; want %d, ENOSPC", v.name, code, errOut, exitFailure)
		}
		if !isCharDevice(full) {
			t.Fatalf("%s -o full: the device node is gone", v.name)
		}
		if _, errOut, code := runCLI(t, v.args(in, in2, null)...); code != exitOK {
			t.Errorf("%s -o null: exit %d, %q", v.name, code, errOut)
		}
	}
	for _, args := range [][]string{
		{"report", in, "--latency", "rx nope", "-o", null},
		{"heatmap", in, "nope", "arg2", "-o", null},
		{"report", in, "--latency", "rx nope", "-o", full},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, `no probe "nope"`) {
			t.Errorf("%q: exit %d, %q; want %d", args, code, errOut, exitUsage)
		}
	}
	if !isCharDevice(null) || !isCharDevice(full) {
		t.Error("a device node is gone")
	}
	if after := names(t, dir); after != before {
		t.Errorf("the folder held %q, now %q", before, after)
	}
}

// TestOutputExisting: an existing output is refused without --force (exit
// 2, unchanged) and replaced with it, by a new file of mode 0600.
func TestOutputExisting(t *testing.T) {
	dir, in, in2 := outputDir(t)
	for _, v := range writerVerbs {
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(v.name, " ", "-"))
		old := []byte("the user's own file\n")
		if err := os.WriteFile(out, old, 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runCLI(t, v.args(in, in2, out)...)
		if code != exitUsage || !strings.Contains(errOut, "exists: give --force") {
			t.Errorf("%s: exit %d, %q; want %d, \"exists: give --force\"", v.name, code, errOut, exitUsage)
		}
		if !bytes.Equal(readAll(t, out), old) {
			t.Errorf("%s: the existing file changed without --force", v.name)
		}
		if _, errOut, code := runCLI(t, append(v.args(in, in2, out), "--force")...); code != exitOK {
			t.Errorf("%s --force: exit %d, %q", v.name, code, errOut)
		}
		st, err := os.Stat(out)
		if err != nil || bytes.Equal(readAll(t, out), old) || st.Mode().Perm() != 0o600 {
			t.Errorf("%s --force: not replaced by a 0600 file (%v, %v)", v.name, st.Mode(), err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestOutputSymlink: a symbolic link as the output is not followed into
// creating (dangling) or replacing (existing target, even with --force)
// another file; the error names the target. Before, a dangling link
// created its target.
func TestOutputSymlink(t *testing.T) {
	dir, in, in2 := outputDir(t)
	target := filepath.Join(dir, "target")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(target, dangling); err != nil {
		t.Fatal(err)
	}
	precious := filepath.Join(dir, "precious")
	if err := os.WriteFile(precious, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	for _, v := range writerVerbs {
		for _, tc := range []struct {
			out, target string
			force       bool
		}{{dangling, target, false}, {link, precious, false}, {link, precious, true}} {
			args := v.args(in, in2, tc.out)
			if tc.force {
				args = append(args, "--force")
			}
			_, errOut, code := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(errOut, "symbolic link to "+tc.target) {
				t.Errorf("%s -o %s (force %v): exit %d, %q; want %d naming %s", v.name, tc.out, tc.force, code, errOut, exitUsage, tc.target)
			}
		}
		if _, err := os.Lstat(target); err == nil {
			t.Fatalf("%s: created the target of a dangling link", v.name)
		}
		if string(readAll(t, precious)) != "keep\n" {
			t.Fatalf("%s: replaced a file through a link", v.name)
		}
	}
	// A partitioned export's folder is not followed either.
	if err := os.Mkdir(filepath.Join(dir, "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "fleet")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "export", in, "--format", "parquet", "--partition", "-o", filepath.Join(dir, "fleet")); code != exitUsage {
		t.Errorf("partition into a link: exit %d, %q", code, errOut)
	}
	if n := names(t, filepath.Join(dir, "elsewhere")); n != "" {
		t.Errorf("partition wrote through a link: %s", n)
	}
}

// TestOutputMode: every new output is mode 0600 whatever the umask allows,
// partitioned Parquet parts too, and a second partitioned export (of other
// rows) adds part files beside the first's.
func TestOutputMode(t *testing.T) {
	dir, in, in2 := outputDir(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, v := range writerVerbs {
		out := filepath.Join(dir, "new-"+strings.ReplaceAll(v.name, " ", "-"))
		if _, errOut, code := runCLI(t, v.args(in, in2, out)...); code != exitOK {
			t.Fatalf("%s: exit %d, %q", v.name, code, errOut)
		}
		if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", v.name, st.Mode(), err)
		}
	}
	fleet := filepath.Join(dir, "fleet")
	for k, c := range []string{in, in2, in} {
		args := []string{"export", c, "--format", "parquet", "--partition", "-o", fleet}
		if k == 2 {
			args = append(args, "--from", "1ns") // other rows: the same again is refused
		}
		if _, errOut, code := runCLI(t, args...); code != exitOK {
			t.Fatalf("partition: exit %d, %q", code, errOut)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(fleet, "*", "*", "*"))
	hosts := map[string]int{}
	for _, p := range parts {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 || !strings.HasPrefix(filepath.Base(p), "part-") {
			t.Errorf("%s: mode %v (%v), want a part file of mode 0600", p, st.Mode(), err)
		}
		hosts[filepath.Base(filepath.Dir(filepath.Dir(p)))]++
	}
	// 4 probes; host-a exported twice: part-0 and part-1 of each.
	if len(parts) != 12 || hosts["host=host-a"] != 8 || hosts["host=host-b"] != 4 {
		t.Errorf("parts %v", parts)
	}
}

// TestOutputBadNames: a probe or field name the capture lacks is a usage
// error (exit 2) found before anything is written: no output file, nothing
// on standard output, an existing file untouched even with --force.
// Before, report created and then removed -o (deleting an existing file)
// and exited 1.
func TestOutputBadNames(t *testing.T) {
	dir, in, _ := outputDir(t)
	out := filepath.Join(dir, "out")
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := names(t, dir)
	for _, args := range [][]string{
		{"report", in, "--latency", "rx nope"},
		{"report", in, "--latency", "nope rx_ret"},
		{"report", in, "--compare", "rx arg2 rx_ret nope"},
		{"report", in, "--requests", "tx_len nope tx_ret retval"},
		{"heatmap", in, "nope", "arg2"},
		{"heatmap", in, "rx", "nope"},
		{"heatmap", in, "--latency", "rx", "nope"},
	} {
		for _, o := range [][]string{{"-o", out}, {"-o", existing, "--force"}, nil} {
			stdout, errOut, code := runCLI(t, append(args, o...)...)
			if code != exitUsage || stdout != "" || !strings.Contains(errOut, "nope") {
				t.Errorf("%q %q: exit %d, %d bytes on stdout, %q; want %d, nothing", args, o, code, len(stdout), errOut, exitUsage)
			}
		}
	}
	if string(readAll(t, existing)) != "mine\n" {
		t.Error("the existing file changed")
	}
	if after := names(t, dir); after != before {
		t.Errorf("the folder held %q, now %q", before, after)
	}
}

// TestExportFormatFlag: export takes the format with --format or -f; --to
// is the end of the time window only, and a format given to it is a usage
// error pointing to --format.
func TestExportFormatFlag(t *testing.T) {
	_, in, _ := outputDir(t)
	all, _, code := runCLI(t, "export", in, "-f", "csv")
	window, errOut, code2 := runCLI(t, "export", in, "--format", "csv", "--from", "10ms", "--to", "30ms")
	if code != exitOK || code2 != exitOK || len(window) == 0 || len(window) >= len(all) {
		t.Errorf("exit %d, %d (%s); %d bytes in the window, %d in all", code, code2, errOut, len(window), len(all))
	}
	for _, args := range [][]string{
		{"export", in, "--to", "csv"},
		{"export", in, "--to", "parquet", "-o", filepath.Join(filepath.Dir(in), "x.parquet")},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "--format") {
			t.Errorf("%q: exit %d, %q; want %d pointing to --format", args, code, errOut, exitUsage)
		}
	}
	if _, errOut, code := runCLI(t, "export", in); code != exitUsage || !strings.Contains(errOut, "--format is required") {
		t.Errorf("no format: exit %d, %q", code, errOut)
	}
}

// dirWatch watches a folder with inotify for what happens to the names in
// it: whose files are opened, created, deleted or renamed in.
type dirWatch struct {
	t  *testing.T
	fd int
}

func watchDir(t *testing.T, dir string) *dirWatch {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_CREATE|syscall.IN_DELETE|syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	return &dirWatch{t, fd}
}

// events returns what happened since the last call: the inotify mask of
// each name, the events or'ed together.
func (w *dirWatch) events() map[string]uint32 {
	w.t.Helper()
	seen := map[string]uint32{}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(w.fd, buf)
		if err == syscall.EAGAIN {
			return seen
		}
		if err != nil {
			w.t.Fatal(err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			if ev.Mask&syscall.IN_Q_OVERFLOW != 0 {
				w.t.Fatal("inotify queue overflow")
			}
			seen[string(bytes.TrimRight(name, "\x00"))] |= ev.Mask
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestRecordOutputSetupFailure: a recording that fails once its output is
// open (the -p process is a zombie: attaching fails) removes only a file
// it created: a device node survives (before, it was deleted), and an
// existing capture replaced with --force is intact (before, it was
// truncated and deleted). A new output it created is removed. Each
// recording must fail where the test needs it to, attaching the uprobe to
// the zombie, and must have opened its output first (seen with inotify):
// one that fails earlier would leave every file as it was and prove
// nothing.
func TestRecordOutputSetupFailure(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	time.Sleep(200 * time.Millisecond) // it exits; not waited for, it stays a zombie
	null := mknod(t, dir, "null", 3)
	existing := filepath.Join(dir, "old.arrow")
	writeVnet(t, existing, "host-a", 100)
	old := readAll(t, existing)
	fresh := filepath.Join(dir, "fresh.arrow")
	watch := watchDir(t, dir)
	for _, tc := range []struct {
		o []string
		// opened says, from the recording's inotify events by name,
		// whether it opened its output as the rules have it (what it
		// removed after is checked below, from what the folder holds).
		opened func(ev map[string]uint32) bool
	}{
		{[]string{"-o", null}, func(ev map[string]uint32) bool {
			return ev["null"]&syscall.IN_OPEN != 0 && ev["null"]&syscall.IN_CREATE == 0 // written in place
		}},
		{[]string{"-o", existing, "--force"}, func(ev map[string]uint32) bool {
			tmp := 0
			for name, m := range ev {
				if strings.HasPrefix(name, ".old.arrow.") && strings.HasSuffix(name, ".tmp") && m&syscall.IN_CREATE != 0 {
					tmp++
				}
			}
			return tmp == 1 // a temporary file beside it
		}},
		{[]string{"-o", fresh}, func(ev map[string]uint32) bool {
			return ev["fresh.arrow"]&syscall.IN_CREATE != 0 // created at its name
		}},
	} {
		args := append([]string{"record", "-p", strconv.Itoa(zombie.Process.Pid), "u:" + probes + ":tick"}, tc.o...)
		watch.events()
		r := runBin(t, exec.Command(bin, args...))
		ev := watch.events()
		t.Logf("%q: in the folder (inotify masks): %v", tc.o, ev)
		if r.code != exitFailure || !strings.Contains(r.stderr, "attach uprobe") ||
			!strings.Contains(r.stderr, fmt.Sprintf("process %d exited before recording started", zombie.Process.Pid)) {
			t.Fatalf("%q: exit %d, %q; want %d, attaching to the zombie failed (the test needs that setup failure)", tc.o, r.code, r.stderr, exitFailure)
		}
		if !tc.opened(ev) {
			t.Errorf("%q: the recording failed without opening its output as the rules have it (inotify masks: %v): the test checks nothing", tc.o, ev)
		}
	}
	if !isCharDevice(null) {
		t.Error("the device node is gone")
	}
	if !bytes.Equal(readAll(t, existing), old) {
		t.Error("the existing capture changed")
	}
	if _, err := os.Lstat(fresh); err == nil {
		t.Error("the new capture of a failed recording is left")
	}
	if n := names(t, dir); n != "null old.arrow" {
		t.Errorf("the folder holds %q", n)
	}
}

// TestRecordOutputRules: record checks its output before anything is
// attached: a symbolic link is not followed (exit 2, a dangling link's
// target not created, a linked file not replaced even with --force), while
// the same recording into a plain file succeeds.
func TestRecordOutputRules(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target.arrow")
	link := filepath.Join(dir, "c.arrow")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, exec.Command(bin, "record", "-o", link, "-d", "100ms", "u:"+probes+":tick"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "symbolic link to "+target) {
		t.Errorf("dangling link: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("created the target of a dangling link")
	}
	if err := os.WriteFile(target, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, exec.Command(bin, "record", "-o", link, "--force", "-d", "100ms", "u:"+probes+":tick"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "symbolic link to "+target) || string(readAll(t, target)) != "keep\n" {
		t.Errorf("link to a file, --force: exit %d, %q", r.code, r.stderr)
	}
	// The same recording into a plain file records: the refusals above
	// are the link's, not a recording that could not have run.
	plain := filepath.Join(dir, "plain.arrow")
	r = runBin(t, exec.Command(bin, "record", "-o", plain, "-d", "100ms", "u:"+probes+":tick"))
	if r.code != exitOK {
		t.Fatalf("into a plain file: exit %d, %q", r.code, r.stderr)
	}
	if _, _, recovered := countEvents(t, plain); recovered {
		t.Error("into a plain file: the capture has no footer")
	}
}

// TestOutputInterrupted: a verb interrupted (SIGINT) while it writes leaves
// neither its output nor its temporary file, and exits 130 without an
// error about the output it discarded.
func TestOutputInterrupted(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "big.arrow")
	writeVnet(t, in, "host-a", 300_000)
	out := filepath.Join(dir, "out.jsonl")
	cmd := exec.Command(bin, "export", in, "--format", "jsonl", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.*.tmp")); len(tmp) > 0 {
			if st, err := os.Stat(tmp[0]); err == nil && st.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("never saw the temporary output")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want status 130 (the export finished first?); stderr %q", err, stderr.String())
	}
	// Not the error of a write to the output the signal discarded.
	if strings.Contains(stderr.String(), "file already closed") || strings.Contains(stderr.String(), ".tmp") {
		t.Errorf("stderr %q", stderr.String())
	}
	if n := names(t, dir); n != "big.arrow" {
		t.Errorf("left %q", n)
	}
}

// TestRecordForceAbort: --force over an existing capture keeps it whole
// until the new one is finished: a recorder aborted (a second SIGINT)
// leaves the old capture as it was and the new one, recoverable, in the
// temporary file its message names. Before, --force truncated the old
// capture at the start.
func TestRecordForceAbort(t *testing.T) {
	bin, probes := bpftapeBin(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.arrow")
	writeVnet(t, out, "host-a", 100)
	old := readAll(t, out)
	r := abortRecording(t, bin, probes, dir, "-o", out, "--force")
	if r.code != 130 || !strings.Contains(r.stderr, ".c.arrow.*.tmp") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !bytes.Equal(readAll(t, out), old) {
		t.Error("the old capture changed")
	}
	tmp, _ := filepath.Glob(filepath.Join(dir, ".c.arrow.*.tmp"))
	if len(tmp) != 1 {
		t.Fatalf("temporary files %v", tmp)
	}
	if events, _, recovered := countEvents(t, tmp[0]); !recovered || events == 0 {
		t.Errorf("the new capture: recovered %v, %d events", recovered, events)
	}
}

// abortRecording records the probes workload with args (a ready file in
// dir) and aborts it with a second SIGINT while it waits for the command,
// which ignores SIGTERM.
func abortRecording(t *testing.T, bin, probes, dir string, args ...string) result {
	t.Helper()
	ready := filepath.Join(dir, "ready")
	args = append([]string{"record", "--ready-file", ready}, args...)
	cmd := exec.Command(bin, append(args, "-c", "sh -c 'trap \"\" TERM; exec "+probes+" spin 60'", "u:"+probes+":tick(arg0)")...)
	done := make(chan result, 1)
	go func() { done <- runBin(t, cmd) }()
	target := readyTarget(t, waitFile(t, ready, 10*time.Second))
	defer syscall.Kill(target, syscall.SIGKILL)
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(repeatGrace + 200*time.Millisecond) // sooner is the same stop
	cmd.Process.Signal(syscall.SIGINT)
	return <-done
}

// TestOutputUsageErrors: an argument refused once the output is being
// written is a usage error about the arguments (exit 2), not an error
// writing the file, and leaves no file.
func TestOutputUsageErrors(t *testing.T) {
	up := filepath.Join(seedCaptures(t), replaytest.UprobesFile)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"report", up, "--latency", "nosuch", "-o", filepath.Join(dir, "r.html")},
		{"export", up, "--offcpu", "-o", filepath.Join(dir, "off.pb.gz")},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != exitUsage || strings.Contains(stderr, "write "+args[len(args)-1]) {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
		if _, err := os.Stat(args[len(args)-1]); err == nil {
			t.Errorf("%v: left %s", args, args[len(args)-1])
		}
	}
}
