package stacktable

import (
	"debug/elf"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/sideband"
)

// openSideband opens the kernel's side-band for a test.
func openSideband(t *testing.T) *sideband.Reader {
	t.Helper()
	testutil.RequireRoot(t, "perf side-band records of every process")
	sb, err := sideband.Open(sideband.Options{CPUs: runtime.NumCPU(), BuildID: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// mappingAt returns pid's mapping covering a at time t, as replay picks
// it: the latest read at or before t, else the first read after.
func (tb table) mappingAt(pid uint32, a uint64, t int64) *format.Mapping {
	var before, after *format.Mapping
	for i := range tb.Maps {
		m := &tb.Maps[i]
		if m.PID != pid || a < m.Start || a >= m.End {
			continue
		}
		if m.Since <= t && (before == nil || m.Since > before.Since) {
			before = m
		}
		if m.Since > t && (after == nil || m.Since < after.Since) {
			after = m
		}
	}
	if before != nil {
		return before
	}
	return after
}

// nameAt returns the function a of pid resolves to at t, "" for none.
func (tb table) nameAt(pid uint32, a uint64, t int64) string {
	m := tb.mappingAt(pid, a, t)
	if m == nil {
		return ""
	}
	if s := tb.symbol(m.Object, a-m.Bias); s != nil {
		return s.Name
	}
	return ""
}

// TestSidebandExited: a process whose first stack is added after it
// exited resolves from what the side-band told of its mappings, without a
// note; and so does the same binary run again, from its cached objects.
func TestSidebandExited(t *testing.T) {
	sb := openSideband(t)
	bin := buildProg(t, "prog")
	id, _ := elfsym.BuildID(bin)
	c := New(Options{})
	c.UseSideband(sb)
	var all format.StackTable
	for run := range 2 {
		p, a := start(t, bin)
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/proc/" + strconv.FormatUint(uint64(p.pid), 10)); err == nil {
			t.Fatalf("process %d still there", p.pid)
		}
		now := boottime.Now()
		c.Add(p.pid, now, false, []uint64{a.leaf, a.ret, a.top, a.printf})
		all.Add(c.Take())
		tb := table{&all}
		if len(tb.Processes) != 0 {
			t.Fatalf("run %d: notes %+v", run, tb.Processes)
		}
		for _, f := range []struct {
			a    uint64
			name string
		}{{a.leaf, "leaf"}, {a.ret, "mid"}, {a.top, "top"}} {
			m, _, o := tb.resolve(t, p.pid, f.a, f.name, id)
			if m.Since >= now || o.Path != bin {
				t.Errorf("run %d: mapping %+v of %+v: want one of %s from before %d", run, m, o, bin, now)
			}
		}
		if n := tb.nameAt(p.pid, a.printf, now); n != "printf" && n != "_IO_printf" {
			t.Errorf("run %d: printf resolves to %q", run, n)
		}
	}
	checkConsistent(t, c, &all)
}

// TestSidebandExec: two non-PIE programs at the same addresses, the
// first exec'ing the second. The exec comes from the side-band, with its
// time: a stack after it resolves in the second program (read from /proc
// while it runs), and the first program's stack, added after the exec,
// still in the first.
func TestSidebandExec(t *testing.T) {
	sb := openSideband(t)
	first := buildProg(t, "first", "-no-pie", "-fno-pie")
	second := buildProg(t, "second", "-no-pie", "-fno-pie", "-fno-inline", "-DSECOND")
	id1, _ := elfsym.BuildID(first)
	id2, _ := elfsym.BuildID(second)
	p, a := start(t, first, second)
	c := New(Options{})
	c.UseSideband(sb)
	t1 := boottime.Now()
	c.Snapshot(p.pid, t1)
	if _, err := p.stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	b := p.next(t) // the second image runs
	t2 := boottime.Now()
	// What covers the first image's top in the second, by its ELF.
	want := ""
	f, err := elf.Open(second)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value <= a.top && a.top < s.Value+s.Size {
			want = s.Name
		}
	}
	// The second image's stack, then the first's (drained late).
	c.Add(p.pid, t2, false, []uint64{b.leaf, b.ret, b.top, a.top})
	c.Add(p.pid, t1+1, false, []uint64{a.leaf, a.ret, a.top})
	tb := table{c.Take()}
	if len(tb.Processes) != 0 {
		t.Fatalf("notes %+v", tb.Processes)
	}
	for _, f := range []struct {
		t    int64
		a    uint64
		want string
		id   string
	}{
		{t2, b.leaf, "leaf", id2}, {t2, b.ret, "mid", id2}, {t2, b.top, "top", id2}, {t2, a.top, want, id2},
		{t1 + 1, a.leaf, "leaf", id1}, {t1 + 1, a.ret, "mid", id1}, {t1 + 1, a.top, "top", id1},
	} {
		if f.want == "" {
			continue // no function of the second covers the first's top
		}
		m := tb.mappingAt(p.pid, f.a, f.t)
		if m == nil {
			t.Fatalf("no mapping of %#x at %d", f.a, f.t)
		}
		if o := tb.object(m.Object); o == nil || o.BuildID != f.id {
			t.Errorf("%#x at %d: object %+v, want build id %s", f.a, f.t, o, f.id)
		}
		if got := tb.nameAt(p.pid, f.a, f.t); got != f.want {
			t.Errorf("%#x at %d: %q, want %q", f.a, f.t, got, f.want)
		}
	}
	// The second image's mappings are from its exec, after t1.
	if m := tb.mappingAt(p.pid, b.top, t2); m.Since <= t1 || m.Since > t2 {
		t.Errorf("the second image's mapping %+v: want since the exec, between %d and %d", m, t1, t2)
	}
}

// fakeSideband hands out the records it is given.
type fakeSideband struct{ recs []sideband.Record }

func (f *fakeSideband) Read(fn func(*sideband.Record)) {
	for i := range f.recs {
		fn(&f.recs[i])
	}
	f.recs = nil
}

// TestSidebandFork: a child forked by a process whose mappings were read
// has them, with the side-band's later mmaps, though it is gone before its
// first stack; one forked by a process nothing is known of keeps nothing;
// a mapping whose file is not the one at its path (another inode, another
// build id) is refused, saying so, and one of the same build id resolves.
func TestSidebandFork(t *testing.T) {
	bin := buildProg(t, "prog")
	id, _ := elfsym.BuildID(bin)
	dir, _, top, _ := fakeProc(t, bin, 4242, "top")
	// The text segment's offset, and top's in it.
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	var text, topOff uint64
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p.Off &^ 0xfff
			topOff = elfFunc(t, bin, "top") - p.Vaddr&^0xfff
		}
	}
	ef.Close()
	fs := &fakeSideband{}
	c := New(Options{Proc: dir})
	c.UseSideband(fs)
	c.Snapshot(4242, 10)
	fs.recs = []sideband.Record{
		{Kind: sideband.Fork, Time: 20, PID: 4243, PPID: 4242, TID: 4243},
		{Kind: sideband.Fork, Time: 21, PID: 5000, PPID: 4999, TID: 5000},
		// A library the child maps, of another inode than the file at
		// its path.
		{Kind: sideband.Mmap, Time: 22, PID: 4243, Start: 0x7f0000000000, Len: 0x1000, Maj: 8, Min: 1, Ino: 1, Path: bin},
		// And one of another build, and one of the file itself, by
		// build id.
		{Kind: sideband.Mmap, Time: 22, PID: 4243, Start: 0x7f0000010000, Len: 0x1000, BuildID: "0123", Path: bin},
		{Kind: sideband.Mmap, Time: 22, PID: 4243, Start: 0x7f0000020000, Len: 0x1000, Pgoff: text, BuildID: id, Path: bin},
		{Kind: sideband.Exit, Time: 23, PID: 4243, TID: 4243},
	}
	c.Add(4243, 30, false, []uint64{top + 2, 0x7f0000000010, 0x7f0000010010, 0x7f0000020000 + topOff + 2})
	tb := table{c.Take()}
	if m := tb.mapping(4243, 0x7f0000010010); m == nil || !strings.Contains(tb.object(m.Object).NoSymbols, "not the mapped file's 0123") {
		t.Errorf("the library of another build: mapping %+v", m)
	}
	tb.resolve(t, 4243, 0x7f0000020000+topOff+2, "top", id)
	m, _, _ := tb.resolve(t, 4243, top+2, "top", "")
	if m.Since != 20 {
		t.Errorf("the child's mapping %+v: want since 20, its fork", m)
	}
	if m := tb.mapping(4243, 0x7f0000000010); m == nil || !strings.Contains(tb.object(m.Object).NoSymbols, "not the mapped file's 1") {
		t.Errorf("the library of another inode: mapping %+v", m)
	}
	if len(tb.Processes) != 0 {
		t.Errorf("notes %+v", tb.Processes)
	}
	if c.sbp[5000] != nil {
		t.Errorf("a fork of an unknown process is kept: %+v", c.sbp[5000])
	}
	c.Add(5000, 31, false, []uint64{top + 2})
	if d := c.Take(); d == nil || !reflect.DeepEqual(d.Processes, []format.ProcessNote{{PID: 5000, Reason: exitedReason}}) {
		t.Errorf("the unknown child: %+v", d)
	}
}

// TestSidebandImages: images by exec time, out of order and bounded; a
// stack before every exec known resolves in none (the /proc read is the
// newest image's), and says so.
func TestSidebandImages(t *testing.T) {
	bin := buildProg(t, "prog")
	dir, _, top, _ := fakeProc(t, bin, 4242, "top")
	fs := &fakeSideband{}
	c := New(Options{Proc: dir})
	c.UseSideband(fs)
	fs.recs = []sideband.Record{{Kind: sideband.Exec, Time: 100, PID: 4242, TID: 4242}}
	c.Add(4242, 50, false, []uint64{top + 2})  // before the exec: no mappings of that image
	c.Add(4242, 150, false, []uint64{top + 2}) // after: /proc's
	tb := table{c.Take()}
	if len(tb.Maps) != 1 || tb.Maps[0].Since != 100 {
		t.Errorf("maps %+v: want one, since the exec", tb.Maps)
	}
	if !reflect.DeepEqual(tb.Processes, []format.ProcessNote{{PID: 4242, Reason: execReason}}) {
		t.Errorf("notes %+v", tb.Processes)
	}
	for i := range 2 * maxImages {
		fs.recs = append(fs.recs, sideband.Record{Kind: sideband.Exec, Time: int64(1000 - 10*i), PID: 4242, TID: 4242})
	}
	c.Sync()
	n := 0
	last := int64(1 << 62)
	for p := c.procs[4242]; p != nil; p = p.prev {
		if p.since >= last {
			t.Errorf("image since %d after one since %d", p.since, last)
		}
		last = p.since
		n++
	}
	if n != maxImages || c.procs[4242].since != 1000 || len(c.sbp[4242].images) != maxImages {
		t.Errorf("%d images, newest since %d, %d side-band images; want %d, 1000", n, c.procs[4242].since, len(c.sbp[4242].images), maxImages)
	}
}

// TestSidebandBounds: the side-band's processes stay under maxSBProcs,
// those that exited lately kept (their stacks may be still to come), and
// an image's mappings under maxSBMaps.
func TestSidebandBounds(t *testing.T) {
	fs := &fakeSideband{}
	c := New(Options{})
	c.UseSideband(fs)
	const n = 3 * maxSBProcs
	at := func(pid uint32) int64 { return int64(pid) * 10e6 } // 10 ms apart
	for pid := uint32(1); pid <= n; pid++ {
		fs.recs = append(fs.recs, sideband.Record{Kind: sideband.Exec, Time: at(pid), PID: pid, TID: pid},
			sideband.Record{Kind: sideband.Mmap, Time: at(pid), PID: pid, Start: 0x1000, Len: 0x1000, Path: "/x"})
		if pid%2 == 0 {
			fs.recs = append(fs.recs, sideband.Record{Kind: sideband.Exit, Time: at(pid), PID: pid, TID: pid})
		}
	}
	for i := range 2 * maxSBMaps {
		fs.recs = append(fs.recs, sideband.Record{Kind: sideband.Mmap, Time: at(n), PID: n - 1, Start: 0x100000 + 0x1000*uint64(i), Len: 0x1000, Path: "/y"})
	}
	c.Sync()
	if len(c.sbp) > maxSBProcs || c.sbSweeps == 0 {
		t.Errorf("%d processes kept, %d sweeps; want at most %d", len(c.sbp), c.sbSweeps, maxSBProcs)
	}
	for pid := uint32(n - 100); pid <= n; pid++ {
		if c.sbp[pid] == nil {
			t.Errorf("process %d (exited %v), of the last second, was forgotten", pid, pid%2 == 0)
		}
	}
	if s := c.sbp[n-1]; s == nil || len(s.images[0].maps) != maxSBMaps {
		t.Errorf("the mappings of a process: %+v, want %d", s, maxSBMaps)
	}
}
