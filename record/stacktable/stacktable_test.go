package stacktable

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/record/elfsym"
)

// progSrc is the test program: main → top → mid → leaf. It prints the
// runtime addresses of top, mid and leaf, a return address inside mid (the
// one leaf returns to), and those of printf and read in libc; then it
// waits for a line on stdin, and with an argument execs it.
const progSrc = `#include <stdio.h>
#include <unistd.h>

void *ret_in_mid;

__attribute__((noinline)) void leaf(void) {
	ret_in_mid = __builtin_return_address(0);
}

__attribute__((noinline)) void mid(void) {
	leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void top(void) {
	mid();
}

int main(int argc, char **argv) {
	char buf[64];
	top();
	printf("%p %p %p %p %p %p\n", (void *)top, (void *)mid, (void *)leaf, ret_in_mid, (void *)printf, (void *)read);
	fflush(stdout);
	if (read(0, buf, sizeof buf) > 0 && argc > 1)
		execv(argv[1], argv + 1);
	return 0;
}
`

// buildProg builds progSrc with flags after -O0 -fno-omit-frame-pointer -g.
func buildProg(tb testing.TB, name string, flags ...string) string {
	tb.Helper()
	src := filepath.Join(tb.TempDir(), name+".c")
	if err := os.WriteFile(src, []byte(progSrc), 0o644); err != nil {
		tb.Fatal(err)
	}
	return testutil.BuildC(tb, src, name, append([]string{"-O0", "-fno-omit-frame-pointer", "-g"}, flags...)...)
}

// addrs are the addresses a running test program printed.
type addrs struct {
	top, mid, leaf, ret, printf, read uint64
}

// running is a started test program.
type running struct {
	cmd   *exec.Cmd
	pid   uint32
	stdin io.WriteCloser
	out   *bufio.Reader
}

// start runs bin with args and waits for its addresses; the program is
// killed at the end of the test.
func start(t *testing.T, bin string, args ...string) (*running, addrs) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	r := &running{cmd: cmd, pid: uint32(cmd.Process.Pid), stdin: stdin, out: bufio.NewReader(stdout)}
	return r, r.next(t)
}

// next reads the addresses the program (or the one it exec'd) prints.
func (r *running) next(t *testing.T) addrs {
	t.Helper()
	line, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the program's addresses: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 6 {
		t.Fatalf("the program printed %q", line)
	}
	var v [6]uint64
	for i, s := range f {
		if v[i], err = strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); err != nil {
			t.Fatalf("the program printed %q: %v", line, err)
		}
	}
	return addrs{top: v[0], mid: v[1], leaf: v[2], ret: v[3], printf: v[4], read: v[5]}
}

// table indexes a stack table for the checks.
type table struct {
	*format.StackTable
}

func (tb table) object(id uint32) *format.Object {
	for i := range tb.Objects {
		if tb.Objects[i].ID == id {
			return &tb.Objects[i]
		}
	}
	return nil
}

// mapping returns pid's mapping covering a, the latest read.
func (tb table) mapping(pid uint32, a uint64) *format.Mapping {
	var best *format.Mapping
	for i := range tb.Maps {
		m := &tb.Maps[i]
		if m.PID == pid && m.Start <= a && a < m.End && (best == nil || m.Since > best.Since) {
			best = m
		}
	}
	return best
}

// symbol returns the symbol of object obj covering objAddr.
func (tb table) symbol(obj uint32, objAddr uint64) *format.Symbol {
	for i := range tb.Symbols {
		s := &tb.Symbols[i]
		if s.Object == obj && s.Addr <= objAddr && objAddr-s.Addr < s.Size {
			return s
		}
	}
	return nil
}

// resolve checks that a of pid resolves to function want of an object
// with build id buildID (if not ""), and returns the mapping and symbol.
func (tb table) resolve(t *testing.T, pid uint32, a uint64, want, buildID string) (*format.Mapping, *format.Symbol, *format.Object) {
	t.Helper()
	m := tb.mapping(pid, a)
	if m == nil {
		t.Fatalf("no mapping of %d covers %#x (%s): %+v", pid, a, want, tb.Maps)
	}
	o := tb.object(m.Object)
	if o == nil {
		t.Fatalf("mapping %+v names object %d, which the table lacks", m, m.Object)
	}
	if buildID != "" && o.BuildID != buildID {
		t.Errorf("%#x (%s): object %+v, want build id %s", a, want, o, buildID)
	}
	s := tb.symbol(m.Object, a-m.Bias)
	if s == nil || s.Name != want {
		t.Fatalf("%#x: object address %#x of %s: symbol %+v, want %s (symbols %+v)", a, a-m.Bias, o.Path, s, want, tb.Symbols)
	}
	return m, s, o
}

// checkConsistent checks the table's references and the collector's
// stats against the union of its parts.
func checkConsistent(t testing.TB, c *Collector, all *format.StackTable) {
	t.Helper()
	objs := map[uint32]bool{}
	for i, o := range all.Objects {
		if o.ID != uint32(i+1) {
			t.Errorf("object %d has id %d, want %d (ids in order of first use)", i, o.ID, i+1)
		}
		objs[o.ID] = true
	}
	for _, m := range all.Maps {
		if !objs[m.Object] || m.End <= m.Start {
			t.Errorf("mapping %+v: bad range or unknown object", m)
		}
	}
	type key struct {
		obj  uint32
		addr uint64
	}
	syms := map[key]bool{}
	for _, s := range all.Symbols {
		if !objs[s.Object] {
			t.Errorf("symbol %+v of an unknown object", s)
		}
		if syms[key{s.Object, s.Addr}] {
			t.Errorf("symbol %+v stored twice", s)
		}
		syms[key{s.Object, s.Addr}] = true
	}
	st := c.Stats()
	if st.Stacks != len(all.Stacks) || st.Objects != len(all.Objects) || st.Symbols != len(all.Symbols) {
		t.Errorf("Stats = %+v; the table has %d stacks, %d objects, %d symbols", st, len(all.Stacks), len(all.Objects), len(all.Symbols))
	}
}

// elfFunc returns the value of function name in the ELF file at path.
func elfFunc(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			return s.Value
		}
	}
	t.Fatalf("%s has no function %s", path, name)
	return 0
}

// TestUserStack: a stack of a live process resolves to top, mid and leaf
// of its binary (PIE and not) and printf and read of its libc, with the
// objects' build ids, mappings whose Bias and Offset agree with the ELF
// file, and only the entries new since the last Take.
func TestUserStack(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	for _, pie := range []bool{true, false} {
		t.Run(map[bool]string{true: "pie", false: "no-pie"}[pie], func(t *testing.T) {
			flags := []string{"-no-pie"}
			if pie {
				flags = []string{"-fPIE", "-pie"}
			}
			bin := buildProg(t, "prog", flags...)
			id, err := elfsym.BuildID(bin)
			if err != nil || id == "" {
				t.Fatalf("build id of %s: %q, %v", bin, id, err)
			}
			p, a := start(t, bin)
			c := New(Options{DebugDirs: elfsym.DebugDirs(nil)})
			frames := []uint64{a.leaf, a.ret, a.mid, a.top}
			if pie {
				frames = append(frames, a.printf, a.read)
			}
			got := c.Add(p.pid, 100, false, frames)
			if got != format.StackID(false, frames) {
				t.Errorf("Add = %#x, want format.StackID %#x", got, format.StackID(false, frames))
			}
			part := c.Take()
			if part == nil {
				t.Fatal("Take after Add: nil")
			}
			tb := table{part}
			if len(tb.Stacks) != 1 || tb.Stacks[0].ID != got || tb.Stacks[0].Kernel || !slices.Equal(tb.Stacks[0].Frames, frames) {
				t.Errorf("stacks %+v, want one: %#x %x", tb.Stacks, got, frames)
			}
			nbin := 0
			for _, o := range tb.Objects {
				if o.BuildID == id {
					nbin++
					if o.Path != bin || o.Kernel || o.NoSymbols != "" {
						t.Errorf("the binary's object: %+v", o)
					}
				}
			}
			if nbin != 1 {
				t.Errorf("%d objects with the binary's build id %s: %+v", nbin, id, tb.Objects)
			}
			ef, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			for _, f := range []struct {
				a    uint64
				name string
			}{{a.leaf, "leaf"}, {a.ret, "mid"}, {a.mid, "mid"}, {a.top, "top"}} {
				m, s, _ := tb.resolve(t, p.pid, f.a, f.name, id)
				if want := elfFunc(t, bin, f.name); s.Addr != want {
					t.Errorf("%s at %#x in the table, %#x in the binary", f.name, s.Addr, want)
				}
				if m.Since != 100 || m.PID != p.pid {
					t.Errorf("mapping %+v: want pid %d, since 100", m, p.pid)
				}
				// Offset: the file offset of the address.
				if off, err := elfsym.FileOffset(ef, f.a-m.Bias); err != nil || off != f.a-m.Start+m.Offset {
					t.Errorf("%s: file offset %#x from the mapping, %#x (%v) from the ELF file", f.name, f.a-m.Start+m.Offset, off, err)
				}
				if !pie && m.Bias != 0 {
					t.Errorf("non-PIE binary mapped with bias %#x", m.Bias)
				}
			}
			if pie {
				for _, f := range []struct {
					a    uint64
					name string
				}{{a.printf, "printf"}, {a.read, "read"}} {
					_, s, o := tb.resolve(t, p.pid, f.a, f.name, "")
					if !strings.Contains(filepath.Base(o.Path), "libc") {
						t.Errorf("%s in %s, not libc", f.name, o.Path)
					}
					if want, err := elfsym.BuildID(o.Path); err != nil || want == "" || o.BuildID != want {
						t.Errorf("%s: build id %q, elfsym says %q (%v)", o.Path, o.BuildID, want, err)
					}
					if want := elfFunc(t, o.Path, f.name); s.Addr != want {
						t.Errorf("%s at %#x in the table, %#x in %s", f.name, s.Addr, want, o.Path)
					}
				}
			}
			all := *part
			checkConsistent(t, c, &all)

			// The same stack again: the same id, nothing new, no allocation.
			if again := c.Add(p.pid, 200, false, frames); again != got {
				t.Errorf("second Add = %#x, want %#x", again, got)
			}
			if d := c.Take(); d != nil {
				t.Errorf("Take after the same stack again: %+v", d)
			}
			if n := testing.AllocsPerRun(1000, func() { c.Add(p.pid, 300, false, frames) }); n != 0 {
				t.Errorf("Add of a known stack allocates %v times", n)
			}

			// Another stack through the same functions: only itself.
			more := []uint64{a.mid, a.top}
			id2 := c.Add(p.pid, 400, false, more)
			d := c.Take()
			if d == nil || len(d.Stacks) != 1 || d.Stacks[0].ID != id2 || len(d.Objects) != 0 || len(d.Maps) != 0 {
				t.Fatalf("Take after a new stack over known code: %+v", d)
			}
			for _, s := range d.Symbols {
				for _, old := range part.Symbols {
					if s.Object == old.Object && s.Addr == old.Addr {
						t.Errorf("symbol %+v taken twice", s)
					}
				}
			}
			all.Add(d)
			checkConsistent(t, c, &all)
			if c.Take() != nil {
				t.Error("Take twice: not nil")
			}
		})
	}
}

// TestVDSO: a frame in the [vdso] resolves to its function, from the
// image read in the process's memory.
func TestVDSO(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/mem")
	bin := buildProg(t, "prog")
	p, _ := start(t, bin)
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	var vdso mapsLine
	for _, line := range strings.Split(string(maps), "\n") {
		if l, ok := parseMapsLine([]byte(line)); ok && l.path == "[vdso]" {
			vdso = l
		}
	}
	if vdso.start == 0 {
		t.Skip("no [vdso]")
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	img := make([]byte, vdso.end-vdso.start)
	_, err = mem.ReadAt(img, int64(vdso.start))
	mem.Close()
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(strings.NewReader(string(img)))
	if err != nil {
		t.Fatal(err)
	}
	dyn, _ := ef.DynamicSymbols()
	var fn elf.Symbol
	for _, s := range dyn {
		if s.Name == "__vdso_clock_gettime" {
			fn = s
		}
	}
	if fn.Value == 0 {
		t.Skip("the vdso has no __vdso_clock_gettime")
	}
	var load elf.ProgHeader
	for _, ph := range ef.Progs {
		if ph.Type == elf.PT_LOAD {
			load = ph.ProgHeader
			break
		}
	}
	a := vdso.start + fn.Value - load.Vaddr + 3
	c := New(Options{})
	c.Add(p.pid, 1, false, []uint64{a})
	tb := table{c.Take()}
	_, s, o := tb.resolve(t, p.pid, a, "__vdso_clock_gettime", "")
	if o.Path != "[vdso]" || o.BuildID == "" || s.Addr != fn.Value {
		t.Errorf("vdso object %+v, symbol %+v (want at %#x)", o, s, fn.Value)
	}
}

// TestDeletedBinary: the binary of a running process is deleted before
// the stack comes; its symbols are still read, through map_files.
func TestDeletedBinary(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	orig := buildProg(t, "prog")
	id, _ := elfsym.BuildID(orig)
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "doomed")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p, a := start(t, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	c := New(Options{})
	c.Add(p.pid, 5, false, []uint64{a.leaf, a.ret, a.top})
	tb := table{c.Take()}
	for _, f := range []struct {
		a    uint64
		name string
	}{{a.leaf, "leaf"}, {a.ret, "mid"}, {a.top, "top"}} {
		_, _, o := tb.resolve(t, p.pid, f.a, f.name, id)
		if !strings.HasPrefix(o.Path, bin) {
			t.Errorf("object path %q, want %s (deleted)", o.Path, bin)
		}
	}
	if st := c.Stats(); st.Unresolved != 0 {
		t.Errorf("Stats = %+v, want no unresolved frame", st)
	}
}

// TestReopen: past maxOpenFiles an object is not kept open but opened
// again when a frame needs its symbols: through map_files while its
// process lives; when the process and the file are gone, its object says
// so.
func TestReopen(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	defer func(n int) { maxOpenFiles = n }(maxOpenFiles)
	maxOpenFiles = 0
	orig := buildProg(t, "prog")
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}

	p, a := start(t, bin)
	c := New(Options{})
	c.Snapshot(p.pid, 1)
	if c.openFiles != 0 {
		t.Errorf("%d files kept open, want 0", c.openFiles)
	}
	os.Remove(bin) // map_files still reaches it
	c.Add(p.pid, 2, false, []uint64{a.leaf, a.ret})
	tb := table{c.Take()}
	tb.resolve(t, p.pid, a.leaf, "leaf", "")
	tb.resolve(t, p.pid, a.ret, "mid", "")

	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	q, b := start(t, bin)
	c = New(Options{})
	c.Snapshot(q.pid, 1)
	q.cmd.Process.Kill()
	q.cmd.Wait()
	os.Remove(bin)
	c.Add(q.pid, 2, false, []uint64{b.leaf})
	tb = table{c.Take()}
	m := tb.mapping(q.pid, b.leaf)
	if m == nil {
		t.Fatalf("no mapping: %+v", tb.Maps)
	}
	if o := tb.object(m.Object); o == nil || !strings.Contains(o.NoSymbols, "could not be opened again") {
		t.Errorf("object %+v, want NoSymbols saying it could not be opened again", o)
	}
}

// TestSameStackTwoProcesses: the same frames in two processes of one
// non-PIE binary make one stack, and the mappings of both.
func TestSameStackTwoProcesses(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	bin := buildProg(t, "prog", "-no-pie")
	p, a := start(t, bin)
	q, b := start(t, bin)
	if a.top != b.top {
		t.Skipf("top at %#x and %#x", a.top, b.top)
	}
	frames := []uint64{a.leaf, a.ret, a.top}
	c := New(Options{})
	id := c.Add(p.pid, 1, false, frames)
	if c.Add(q.pid, 2, false, frames) != id {
		t.Fatal("two ids for one stack")
	}
	tb := table{c.Take()}
	if len(tb.Stacks) != 1 || len(tb.Objects) != 1 {
		t.Errorf("%d stacks, objects %+v; want 1, 1", len(tb.Stacks), tb.Objects)
	}
	for _, pid := range []uint32{p.pid, q.pid} {
		tb.resolve(t, pid, a.top, "top", "")
	}
}

// TestStrippedBinary: a stripped binary's symbols come from its debug
// file, found by build id in a debug dir; without the dir its object says
// why it has no symbols, and the frames count as unresolved.
func TestStrippedBinary(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	orig := buildProg(t, "prog")
	dir := t.TempDir()
	bin, debug := filepath.Join(dir, "prog"), filepath.Join(dir, "prog.debug")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("objcopy", "--only-keep-debug", orig, debug)
	run("strip", "--strip-all", "-o", bin, orig)
	run("objcopy", "--add-gnu-debuglink="+debug, bin)
	id, err := elfsym.BuildID(bin)
	if err != nil || len(id) < 3 {
		t.Fatalf("build id of %s: %q, %v", bin, id, err)
	}
	tree := t.TempDir()
	byID := filepath.Join(tree, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(byID), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(debug, byID); err != nil {
		t.Fatal(err)
	}
	p, a := start(t, bin)
	frames := []uint64{a.leaf, a.ret, a.mid, a.top}

	c := New(Options{DebugDirs: []string{tree}})
	c.Add(p.pid, 1, false, frames)
	tb := table{c.Take()}
	for _, f := range []struct {
		a    uint64
		name string
	}{{a.leaf, "leaf"}, {a.ret, "mid"}, {a.mid, "mid"}, {a.top, "top"}} {
		_, s, _ := tb.resolve(t, p.pid, f.a, f.name, id)
		if want := elfFunc(t, orig, f.name); s.Addr != want {
			t.Errorf("%s at %#x, %#x in the unstripped binary", f.name, s.Addr, want)
		}
	}
	if st := c.Stats(); st.Unresolved != 0 {
		t.Errorf("with the debug dir: Stats = %+v", st)
	}

	for _, dirs := range [][]string{nil, {t.TempDir()}} {
		c = New(Options{DebugDirs: dirs})
		c.Add(p.pid, 1, false, frames)
		tb = table{c.Take()}
		m := tb.mapping(p.pid, a.top)
		if m == nil {
			t.Fatalf("dirs %q: no mapping for top: %+v", dirs, tb.Maps)
		}
		o := tb.object(m.Object)
		if o == nil || o.BuildID != id || !strings.Contains(o.NoSymbols, "stripped") || !strings.Contains(o.NoSymbols, id) {
			t.Errorf("dirs %q: object %+v, want NoSymbols saying stripped, with build id %s", dirs, o, id)
		} else {
			t.Logf("NoSymbols: %s", o.NoSymbols)
		}
		if len(dirs) > 0 && !strings.Contains(o.NoSymbols, dirs[0]) {
			t.Errorf("NoSymbols %q does not name the debug dir %s", o.NoSymbols, dirs[0])
		}
		if len(tb.Symbols) != 0 {
			t.Errorf("dirs %q: symbols %+v", dirs, tb.Symbols)
		}
		if st := c.Stats(); st.Unresolved != len(frames) {
			t.Errorf("dirs %q: Stats = %+v, want %d unresolved", dirs, st, len(frames))
		}
	}
}

// TestExitedProcess: a process gone before its maps are read gets one
// ProcessNote; its stacks still get their ids.
func TestExitedProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("true: %v", err)
	}
	pid := uint32(cmd.Process.Pid)
	c := New(Options{})
	frames := []uint64{0x401000, 0x7f0000001234, 0, 0xffffffff81000000}
	if id := c.Add(pid, 1, false, frames); id != format.StackID(false, frames) {
		t.Errorf("Add = %#x, want %#x", id, format.StackID(false, frames))
	}
	c.Add(pid, 2, false, frames[:2])
	c.Snapshot(pid, 3)
	tb := c.Take()
	want := []format.ProcessNote{{PID: pid, Reason: "exited before its mappings were read"}}
	if tb == nil || !reflect.DeepEqual(tb.Processes, want) || len(tb.Stacks) != 2 || len(tb.Maps) != 0 {
		t.Errorf("table %+v, want two stacks and the note %+v", tb, want)
	}
	if st := c.Stats(); st.Unresolved != 6 || st.Stacks != 2 {
		t.Errorf("Stats = %+v, want 2 stacks, 6 unresolved frames", st)
	}
}

// TestSnapshot: mappings read by Snapshot while the process lives resolve
// its stack after it has exited.
func TestSnapshot(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	bin := buildProg(t, "prog")
	p, a := start(t, bin)
	c := New(Options{})
	c.Snapshot(p.pid, 7)
	c.Snapshot(p.pid, 8) // known: nothing
	if d := c.Take(); d != nil {
		t.Errorf("Take after Snapshot alone: %+v (mappings enter with the frames that need them)", d)
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	c.Add(p.pid, 9, false, []uint64{a.leaf, a.ret, a.top})
	tb := table{c.Take()}
	for _, f := range []struct {
		a    uint64
		name string
	}{{a.leaf, "leaf"}, {a.ret, "mid"}, {a.top, "top"}} {
		m, _, _ := tb.resolve(t, p.pid, f.a, f.name, "")
		if m.Since != 7 {
			t.Errorf("mapping %+v: want since 7, the Snapshot", m)
		}
	}
	if len(tb.Processes) != 0 {
		t.Errorf("notes %+v", tb.Processes)
	}
}

// TestExec: a process that execs another binary after its first stack;
// a stack in the new binary reads the maps again, and its mappings come
// with the later time.
func TestExec(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	first := buildProg(t, "first")
	second := buildProg(t, "second", "-fno-inline", "-DSECOND") // another build id
	id1, _ := elfsym.BuildID(first)
	id2, _ := elfsym.BuildID(second)
	if id1 == id2 {
		t.Fatal("the two builds have one build id")
	}
	p, a := start(t, first, second)
	c := New(Options{})
	c.Add(p.pid, 1000, false, []uint64{a.leaf, a.ret, a.top})
	tb := table{c.Take()}
	tb.resolve(t, p.pid, a.top, "top", id1)

	if _, err := p.stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	b := p.next(t) // from the exec'd program
	c.Add(p.pid, 2000, false, []uint64{b.leaf, b.ret, b.top})
	tb = table{c.Take()}
	for _, f := range []struct {
		a    uint64
		name string
	}{{b.leaf, "leaf"}, {b.ret, "mid"}, {b.top, "top"}} {
		m, _, o := tb.resolve(t, p.pid, f.a, f.name, id2)
		if m.Since != 2000 || o.Path != second {
			t.Errorf("after the exec: mapping %+v of %+v, want since 2000, of %s", m, o, second)
		}
	}
}

// kallsymsEntry is a symbol of /proc/kallsyms and the address of the next.
func kallsymsEntry(t *testing.T, name string) (addr, next uint64) {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Skipf("no kallsyms: %v", err)
	}
	defer f.Close()
	var all []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		v, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || v == 0 || fs[1] == "a" || fs[1] == "A" {
			continue
		}
		all = append(all, v)
		if fs[2] == name && len(fs) == 3 && (fs[1] == "T" || fs[1] == "t") {
			addr = v
		}
	}
	if addr == 0 {
		t.Skipf("kallsyms has no %s (or hides addresses)", name)
	}
	next = ^uint64(0)
	for _, v := range all {
		if v > addr && v < next {
			next = v
		}
	}
	return addr, next
}

// TestKernelStack: kernel frames resolve to kallsyms functions of
// [kernel], each of the size up to the next symbol.
func TestKernelStack(t *testing.T) {
	testutil.RequireRoot(t, "reading kallsyms addresses")
	read, readNext := kallsymsEntry(t, "vfs_read")
	sys, sysNext := kallsymsEntry(t, "do_syscall_64")
	c := New(Options{})
	frames := []uint64{read + 0x10, sys + 5}
	id := c.Add(0, 1, true, frames)
	if id != format.StackID(true, frames) {
		t.Errorf("Add = %#x, want %#x", id, format.StackID(true, frames))
	}
	tb := c.Take()
	if tb == nil || len(tb.Stacks) != 1 || !tb.Stacks[0].Kernel || len(tb.Maps) != 0 || len(tb.Processes) != 0 {
		t.Fatalf("table %+v", tb)
	}
	if len(tb.Objects) != 1 || tb.Objects[0].Path != "[kernel]" || !tb.Objects[0].Kernel || tb.Objects[0].NoSymbols != "" {
		t.Fatalf("objects %+v, want [kernel]", tb.Objects)
	}
	if data, err := os.ReadFile("/sys/kernel/notes"); err == nil && findBuildID(data, binary.NativeEndian) != "" && tb.Objects[0].BuildID == "" {
		t.Errorf("[kernel] has no build id; /sys/kernel/notes has one")
	} else {
		t.Logf("[kernel] build id %s", tb.Objects[0].BuildID)
	}
	want := map[string]format.Symbol{
		"vfs_read":      {Object: tb.Objects[0].ID, Addr: read, Size: readNext - read, Name: "vfs_read"},
		"do_syscall_64": {Object: tb.Objects[0].ID, Addr: sys, Size: sysNext - sys, Name: "do_syscall_64"},
	}
	for _, s := range tb.Symbols {
		if w, ok := want[s.Name]; ok {
			if s != w {
				t.Errorf("symbol %+v, want %+v", s, w)
			}
			delete(want, s.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing symbols %v in %+v", want, tb.Symbols)
	}
	if st := c.Stats(); st.Unresolved != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestKallsymsFake: modules get their own objects; a kallsyms that hides
// its addresses leaves [kernel] with the reason.
func TestKallsymsFake(t *testing.T) {
	dir := t.TempDir()
	ks := filepath.Join(dir, "kallsyms")
	os.WriteFile(ks, []byte(strings.Join([]string{
		"0000000000000000 A fixed_percpu_data",
		"ffffffff81000000 T _stext",
		"ffffffff81000100 T core_fn",
		"ffffffff81000100 t __core_fn_alias",
		"ffffffff81000180 D some_data",
		"ffffffffc0001000 t mod_fn\t[mymod]",
		"ffffffffc0001040 t mod_fn2\t[mymod]",
		"ffffffffc0002000 t other_fn\t[other]",
	}, "\n")+"\n"), 0o644)
	c := New(Options{Kallsyms: ks})
	c.Add(0, 1, true, []uint64{0xffffffff81000110, 0xffffffffc0001011, 0xffffffffc0002001, 0xffffffff80000000})
	tb := c.Take()
	var objs []string
	for _, o := range tb.Objects {
		objs = append(objs, o.Path)
		if !o.Kernel {
			t.Errorf("object %+v not Kernel", o)
		}
	}
	if fmt.Sprint(objs) != "[[kernel] [mymod] [other]]" {
		t.Errorf("objects %v", objs)
	}
	wantSyms := []format.Symbol{
		{Object: 1, Addr: 0xffffffff81000100, Size: 0x80, Name: "core_fn"},
		{Object: 2, Addr: 0xffffffffc0001000, Size: 0x40, Name: "mod_fn"},
		{Object: 3, Addr: 0xffffffffc0002000, Size: 0, Name: "other_fn"},
	}
	if !reflect.DeepEqual(tb.Symbols, wantSyms) {
		t.Errorf("symbols %+v\nwant %+v", tb.Symbols, wantSyms)
	}
	if st := c.Stats(); st.Unresolved != 1 {
		t.Errorf("Stats = %+v, want 1 unresolved", st)
	}

	os.WriteFile(ks, []byte("0000000000000000 T core_fn\n0000000000000000 t mod_fn\t[mymod]\n"), 0o644)
	c = New(Options{Kallsyms: ks})
	c.Add(0, 1, true, []uint64{0xffffffff81000110})
	tb = c.Take()
	if len(tb.Objects) != 1 || tb.Objects[0].Path != "[kernel]" || !strings.Contains(tb.Objects[0].NoSymbols, "kptr_restrict") {
		t.Errorf("hidden addresses: objects %+v", tb.Objects)
	}

	// ReadKernelSymbols reads kallsyms then, not at the first kernel stack.
	os.WriteFile(ks, []byte("ffffffff81000000 T core_fn\nffffffff81000100 D data\n"), 0o644)
	c = New(Options{Kallsyms: ks})
	c.ReadKernelSymbols()
	os.Remove(ks)
	c.Add(0, 1, true, []uint64{0xffffffff81000010})
	if tb = c.Take(); len(tb.Symbols) != 1 || tb.Symbols[0].Name != "core_fn" {
		t.Errorf("after ReadKernelSymbols and removing the file: symbols %+v, objects %+v", tb.Symbols, tb.Objects)
	}
}

// fakeProc makes a /proc with process pid mapping the executable segment
// of the ELF file bin at a made-up PIE address, then anonymous executable
// memory at anon; addr is the runtime address of function fn.
func fakeProc(tb testing.TB, bin string, pid int, fn string) (dir string, maps []byte, addr, anon uint64) {
	tb.Helper()
	ef, err := elf.Open(bin)
	if err != nil {
		tb.Fatal(err)
	}
	defer ef.Close()
	var text *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p
		}
	}
	syms, _ := ef.Symbols()
	var value uint64
	for _, s := range syms {
		if s.Name == fn {
			value = s.Value
		}
	}
	if text == nil || value == 0 {
		tb.Fatalf("%s: no text segment or no %s", bin, fn)
	}
	const base = 0x555555554000
	start := base + text.Vaddr&^0xfff
	end := (base + text.Vaddr + text.Filesz + 0xfff) &^ 0xfff
	maps = fmt.Appendf(nil, "%x-%x r--p 00000000 08:01 77 %s\n%x-%x r-xp %08x 08:01 77 %s\n%x-%x rwxp 00000000 00:00 0 \n",
		uint64(base), start, bin, start, end, text.Off&^0xfff, bin, end+0x10000, end+0x20000)
	dir = tb.TempDir()
	pd := filepath.Join(dir, strconv.Itoa(pid))
	if err := os.MkdirAll(pd, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pd, "maps"), maps, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir, maps, base + value, end + 0x10000
}

// TestFakeProc: a maps file with no map_files next to it: the object is
// opened by its path, and the Bias follows the program headers.
func TestFakeProc(t *testing.T) {
	bin := buildProg(t, "prog")
	dir, _, top, anon := fakeProc(t, bin, 4242, "top")
	c := New(Options{Proc: dir})
	// The anonymous executable mapping: no object; a kernel address and
	// garbage: nothing.
	c.Add(4242, 1, false, []uint64{top + 2, top + 3, anon + 8, 0xffffffffff600000, 0x1000})
	tb := table{c.Take()}
	m, _, _ := tb.resolve(t, 4242, top+2, "top", "")
	if m.Bias != 0x555555554000 {
		t.Errorf("bias %#x, want %#x", m.Bias, 0x555555554000)
	}
	if st := c.Stats(); st.Unresolved != 3 {
		t.Errorf("Stats = %+v, want 3 unresolved", st)
	}
	if len(tb.Maps) != 1 || len(tb.Objects) != 1 || tb.Objects[0].Path != bin {
		t.Errorf("maps %+v, objects %+v: want the text mapping of %s alone", tb.Maps, tb.Objects, bin)
	}
	// The same frames in another process: its own mappings (here none).
	c.Add(4243, 2, false, []uint64{top + 2, top + 3, anon + 8, 0xffffffffff600000, 0x1000})
	d := c.Take()
	if d == nil || len(d.Stacks) != 0 || len(d.Processes) != 1 || d.Processes[0].PID != 4243 {
		t.Errorf("the same stack in a gone process: %+v", d)
	}
}

// BenchmarkAddSeen: Add of a stack already in the table.
func BenchmarkAddSeen(b *testing.B) {
	frames := make([]uint64, 24)
	for i := range frames {
		frames[i] = 0x7f0000001000 + uint64(i)*0x1234
	}
	c := New(Options{})
	pid := uint32(os.Getpid())
	c.Add(pid, 1, false, frames)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Add(pid, int64(i), false, frames)
	}
}

// FuzzAdd adds stacks of fuzzed frames against a fake /proc whose maps and
// kallsyms are fuzzed too: never a panic, and a consistent table.
func FuzzAdd(f *testing.F) {
	bin := buildProg(f, "prog")
	_, maps, top, _ := fakeProc(f, bin, 4242, "top")
	kallsyms := []byte("ffffffff81000000 T _stext\nffffffff81000100 T core_fn\nffffffffc0001000 t mod_fn\t[mymod]\n")
	frames := func(v ...uint64) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, x)
		}
		return b
	}
	f.Add(maps, kallsyms, frames(top, top+1, 0, 0xffffffff81000101), false)
	f.Add(maps, kallsyms, frames(0xffffffff81000101, 0xffffffffc0001001, top), true)
	f.Add([]byte("garbage\n1-0 r-xp 0 0 0\n"), []byte("x y\n"), frames(^uint64(0), 1<<56), false)
	// The files rewritten at every input go on a tmpfs if there is one:
	// ext4 flushes a file truncated and rewritten when it is closed.
	dir := f.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "stacktable-fuzz"); err == nil {
		dir = shm
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	pd := filepath.Join(dir, "4242")
	if err := os.MkdirAll(pd, 0o755); err != nil {
		f.Fatal(err)
	}
	ks := filepath.Join(dir, "kallsyms")
	var lastMaps, lastKallsyms []byte
	write := func(t *testing.T, path string, data []byte, last *[]byte) {
		if *last != nil && string(*last) == string(data) {
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		*last = append([]byte{}, data...)
	}
	f.Fuzz(func(t *testing.T, maps, kallsyms, raw []byte, kernel bool) {
		write(t, filepath.Join(pd, "maps"), maps, &lastMaps)
		write(t, ks, kallsyms, &lastKallsyms)
		var fr []uint64
		for len(raw) >= 8 && len(fr) < 64 {
			fr = append(fr, binary.LittleEndian.Uint64(raw))
			raw = raw[8:]
		}
		c := New(Options{Proc: dir, Kallsyms: ks})
		c.Snapshot(4242, 1)
		var all format.StackTable
		for i, k := range []bool{kernel, !kernel} {
			if id := c.Add(4242, int64(2+i), k, fr); id != format.StackID(k, fr) {
				t.Fatalf("Add = %#x, want %#x", id, format.StackID(k, fr))
			}
			all.Add(c.Take())
		}
		c.Add(4243, 5, false, fr) // no such process
		all.Add(c.Take())
		// 4242 gets a note too when its maps have no usable line.
		notes := map[uint32]int{}
		for _, n := range all.Processes {
			notes[n.PID]++
		}
		if len(all.Stacks) != 2 || notes[4243] != 1 || notes[4242] > 1 || len(notes) != len(all.Processes) {
			t.Fatalf("%d stacks, notes %+v", len(all.Stacks), all.Processes)
		}
		checkConsistent(t, c, &all)
	})
}

// TestExecSameAddresses: two non-PIE programs put different code at the
// same addresses; after Exec, an address resolved in the first image is
// resolved again in the second, with a mapping read at the exec.
func TestExecSameAddresses(t *testing.T) {
	testutil.RequireRoot(t, "reading /proc/PID/map_files")
	first := buildProg(t, "first", "-no-pie", "-fno-pie")
	second := buildProg(t, "second", "-no-pie", "-fno-pie", "-fno-inline", "-DSECOND")
	id2, _ := elfsym.BuildID(second)
	p, a := start(t, first, second)
	c := New(Options{})
	c.Add(p.pid, 1000, false, []uint64{a.top})
	tb := table{c.Take()}
	tb.resolve(t, p.pid, a.top, "top", "")

	if _, err := p.stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	p.next(t) // the second image runs
	// What covers the first image's top in the second, by its ELF.
	f, err := elf.Open(second)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	want := ""
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value <= a.top && a.top < s.Value+s.Size {
			want = s.Name
		}
	}
	if want == "" {
		t.Skipf("no function of %s covers %#x", second, a.top)
	}
	c.Exec(p.pid, 1500)
	c.Add(p.pid, 2000, false, []uint64{a.top})
	tb = table{c.Take()}
	m, _, o := tb.resolve(t, p.pid, a.top, want, id2)
	if m.Since != 1500 || o.Path != second {
		t.Errorf("after the exec: mapping %+v of %+v, want since 1500, of %s", m, o, second)
	}
}
