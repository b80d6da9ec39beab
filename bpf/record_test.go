package bpf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/internal/testutil"
)

// Probe ids used by TestRecord; cookie i carries probe id i+1.
const (
	pWork       = 1 // uprobe work: full-width args (ClassArgs2)
	pWorkNarrow = 2 // uprobe work: 1/2/4-byte signed and unsigned (ClassArgs6)
	pWorkRet    = 3 // uretprobe work: return value and a constant
	pGreet      = 4 // uprobe greet: user string argument
	pDeref      = 5 // uprobe deref: memory, SIB, string via pointer, a fault
	pWrite      = 6 // tracepoint syscalls:sys_exit_write
	pOpenat     = 7 // tracepoint syscalls:sys_enter_openat: user string field
	pRename     = 8 // tracepoint task:task_rename: char arrays, short field
	pExec       = 9 // tracepoint sched:sched_process_exec: __data_loc string
)

func reg(r, size uint8, signed bool) ArgSpec {
	a := ArgSpec{Kind: KindReg, Reg: r, Size: size}
	if signed {
		a.IsSigned = 1
	}
	return a
}

func deref(r uint8, off int64, size uint8, signed bool) ArgSpec {
	a := reg(r, size, signed)
	a.Kind, a.Off = KindRegDeref, off
	return a
}

func spec(id uint16, class uint8, args ...ArgSpec) ProbeSpec {
	s := ProbeSpec{ProbeId: id, SizeClass: class, Nargs: uint8(len(args))}
	for i, a := range args {
		s.Args[i] = a
		if isStrKind(a.Kind) {
			s.Nstr++
		}
	}
	return s
}

// TestRecord attaches every kind of arg spec to the workload and checks each
// recorded value against the workload's own account of what it did.
func TestRecord(t *testing.T) { testRecord(t, false) }

// TestRecordNoCookies is TestRecord with a program per attachment, as on
// kernels without attach cookies: each holds its spec as constants, so
// every arg kind is verified and recorded that way too.
func TestRecordNoCookies(t *testing.T) { testRecord(t, true) }

func testRecord(t *testing.T, noCookies bool) {
	testutil.RequireBPF(t, CheckFeatures)
	tracefs := requireTracefs(t)
	exe := buildWorkload(t)
	w := startWorkload(t, exe, "args")
	pid := w.pid()

	objs := load(t, Options{RingSize: 1 << 20, FilterTgid: uint32(pid), WakeupBytes: 1 << 18, NoCookies: noCookies})

	putSpec(t, objs, pWork-1, spec(pWork, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, false)))
	putSpec(t, objs, pWorkNarrow-1, spec(pWorkNarrow, ClassArgs6,
		reg(RegDI, 1, true), reg(RegDI, 1, false), reg(RegSI, 2, false), reg(RegSI, 2, true),
		reg(RegDX, 1, true), reg(RegDX, 4, false)))
	putSpec(t, objs, pWorkRet-1, spec(pWorkRet, ClassArgs2,
		ArgSpec{Kind: KindRetval, Size: 4, IsSigned: 1}, ArgSpec{Kind: KindConst, Off: -7}))
	putSpec(t, objs, pGreet-1, spec(pGreet, ClassArgs12Str4,
		ArgSpec{Kind: KindUserStr, Reg: RegDI, StrSlot: 2}, reg(RegSI, 8, true)))
	putSpec(t, objs, pDeref-1, spec(pDeref, ClassArgs12Str4,
		deref(RegDI, 0, 4, true),  // p->x
		deref(RegDI, 4, 2, true),  // p->y
		deref(RegDI, 6, 1, false), // p->z
		ArgSpec{Kind: KindSIB, Reg: RegSI, IndexReg: RegDX, Scale: 8, Size: 8, IsSigned: 1}, // arr[idx]
		deref(RegCX, 0, 8, true), // nm->id
		ArgSpec{Kind: KindRegDerefStr, Reg: RegCX, Off: 8, StrSlot: 1}, // nm->name
		deref(RegSI, 1<<46, 8, false),                                  // unmapped: read fault
	))

	write := tpFormat(t, tracefs, "syscalls", "sys_exit_write")
	openat := tpFormat(t, tracefs, "syscalls", "sys_enter_openat")
	rename := tpFormat(t, tracefs, "task", "task_rename")
	exec := tpFormat(t, tracefs, "sched", "sched_process_exec")
	sysnr := write["__syscall_nr"].arg(KindTPField)
	putSpec(t, objs, pWrite-1, spec(pWrite, ClassArgs2, sysnr, write["ret"].arg(KindTPField)))
	dfd := openat["dfd"].arg(KindTPField)
	dfd.Size, dfd.IsSigned = 4, 1 // an int stored in an unsigned long
	putSpec(t, objs, pOpenat-1, spec(pOpenat, ClassArgs12Str4,
		ArgSpec{Kind: KindTPUserStr, Off: int64(openat["filename"].off), StrSlot: 0}, dfd))
	oldcomm, newcomm := rename["oldcomm"].arg(KindTPCharArray), rename["newcomm"].arg(KindTPCharArray)
	newcomm.StrSlot = 1
	putSpec(t, objs, pRename-1, spec(pRename, ClassArgs12Str4,
		oldcomm, newcomm, rename["oom_score_adj"].arg(KindTPField), rename["pid"].arg(KindTPField)))
	putSpec(t, objs, pExec-1, spec(pExec, ClassArgs12Str4,
		ArgSpec{Kind: KindTPDataLocStr, Off: int64(exec["filename"].off), StrSlot: 3},
		exec["pid"].arg(KindTPField), exec["old_pid"].arg(KindTPField)))

	if objs.Cookies() == noCookies {
		t.Fatalf("Cookies() %v with NoCookies %v", objs.Cookies(), noCookies)
	}
	uprobe := func(sym string, idx uint32, ret bool) {
		prog, cookie, err := objs.UprobeProgram(idx)
		if err != nil {
			t.Fatal(err)
		}
		attachUprobe(t, exe, sym, prog, cookie, pid, ret)
	}
	tracepoint := func(group, name string, idx uint32) {
		prog, cookie, err := objs.TracepointProgram(idx, 0)
		if err != nil {
			t.Fatal(err)
		}
		attachTracepoint(t, group, name, prog, cookie)
	}
	uprobe("work", pWork-1, false)
	uprobe("work", pWorkNarrow-1, false)
	uprobe("work", pWorkRet-1, true)
	uprobe("greet", pGreet-1, false)
	uprobe("deref", pDeref-1, false)
	tracepoint("syscalls", "sys_exit_write", pWrite-1)
	tracepoint("syscalls", "sys_enter_openat", pOpenat-1)
	tracepoint("task", "task_rename", pRename-1)
	tracepoint("sched", "sched_process_exec", pExec-1)

	c := collect(t, newReader(t, objs))
	lines := w.run(t)
	samples := c.finish(t)

	byProbe := map[uint16][][]byte{}
	var last uint64
	comms := map[uint32]string{} // by tid, from comm records
	commRecords := 0
	for i, raw := range samples {
		h, err := DecodeHeader(raw)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if h.Class == ClassComm {
			comms[h.TID] = string(Comm(raw))
			commRecords++
			continue
		}
		if h.PID != uint32(pid) || h.TID != uint32(pid) {
			t.Errorf("sample %d: pid %d tid %d, want %d: %s", i, h.PID, h.TID, pid, describe(raw))
		}
		if h.Time < last {
			t.Errorf("sample %d: time %d before previous %d", i, h.Time, last)
		}
		last = h.Time
		comm, ok := comms[h.TID]
		if !ok {
			t.Errorf("sample %d: no comm record before it: %s", i, describe(raw))
		}
		if h.ProbeID != pExec && h.ProbeID != pOpenat && h.ProbeID != pRename && comm != "workload" {
			t.Errorf("sample %d: comm %q", i, comm)
		}
		byProbe[h.ProbeID] = append(byProbe[h.ProbeID], raw)
	}
	for id := uint16(pWork); id <= pExec; id++ {
		if n, err := objs.LostSamples(id); err != nil || n != 0 {
			t.Errorf("probe %d: lost %d, %v", id, n, err)
		}
	}

	// want checks a sample's args, flags and (for string classes) slots.
	want := func(what string, raw []byte, flags uint16, args []int64, strs map[int]string) {
		t.Helper()
		h, _ := DecodeHeader(raw)
		if int(h.Nargs) != len(args) || h.Flags != flags {
			t.Errorf("%s: nargs %d flags %#x, want %d %#x: %s", what, h.Nargs, h.Flags, len(args), flags, describe(raw))
			return
		}
		for i := range ClassArgs(h.Class) {
			var w int64
			if i < len(args) {
				w = args[i]
			}
			if got := int64(Arg(raw, i)); got != w {
				t.Errorf("%s: arg %d = %d, want %d: %s", what, i, got, w, describe(raw))
			}
		}
		if h.Class != ClassArgs12Str4 {
			return
		}
		for slot := range MaxStrs {
			if got := string(Str(raw, slot)); got != strs[slot] { // unused slots are ""
				t.Errorf("%s: str %d = %q, want %q", what, slot, got, strs[slot])
			}
		}
	}
	count := func(id uint16, n int) [][]byte {
		t.Helper()
		if len(byProbe[id]) != n {
			t.Fatalf("probe %d: %d samples, want %d", id, len(byProbe[id]), n)
		}
		return byProbe[id]
	}

	var work, greet, derefs, writes []string
	for _, l := range lines {
		writes = append(writes, l)
		switch {
		case strings.HasPrefix(l, "work "):
			work = append(work, l)
		case strings.HasPrefix(l, "greet "):
			greet = append(greet, l)
		case strings.HasPrefix(l, "deref "):
			derefs = append(derefs, l)
		}
	}
	if len(work) != 20 || len(greet) != 5 || len(derefs) != 4 {
		t.Fatalf("workload output: %q", lines)
	}

	wk, wn, wr := count(pWork, 20), count(pWorkNarrow, 20), count(pWorkRet, 20)
	for i, l := range work {
		f := fields(l, 5)
		a, b, cc, ret := testutil.Atoi(t, f[1]), testutil.Atoi(t, f[2]), testutil.Atoi(t, f[3]), testutil.Atoi(t, f[4])
		want(l, wk[i], 0, []int64{a, b}, nil)
		want(l+" narrow", wn[i], 0, []int64{
			int64(int8(a)), int64(uint8(a)), int64(uint16(b)), int64(int16(b)),
			int64(int8(cc)), int64(uint32(cc))}, nil)
		want(l+" ret", wr[i], 0, []int64{int64(int32(ret)), -7}, nil)
	}

	gr := count(pGreet, 5)
	for i, l := range greet {
		f := fields(l, 4)
		s, flags := f[3], uint16(0)
		if len(s) > StrSlotSize-1 {
			s, flags = s[:StrSlotSize-1], FlagStrTruncated
		}
		want(l, gr[i], flags, []int64{int64(len(s)), testutil.Atoi(t, f[1])}, map[int]string{2: s})
	}

	dr := count(pDeref, 4)
	for i, l := range derefs {
		f := fields(l, 8)
		name, flags := f[7], uint16(FlagReadFault)
		if len(name) > StrSlotSize-1 {
			name, flags = name[:StrSlotSize-1], flags|FlagStrTruncated
		}
		want(l, dr[i], flags, []int64{testutil.Atoi(t, f[1]), testutil.Atoi(t, f[2]), testutil.Atoi(t, f[3]), testutil.Atoi(t, f[4]),
			testutil.Atoi(t, f[5]), int64(len(name)), 0}, map[int]string{1: name})
	}

	// One write(2) per output line; before the "oom" line, the writes to
	// oom_score_adj it reports (the first may fail: a negative ret).
	var rets []int64
	oom := int64(-100)
	for _, l := range writes {
		if f := fields(l, 4); f[0] == "oom" {
			oom = testutil.Atoi(t, f[1])
			rets = append(rets, testutil.Atoi(t, f[2]))
			if r2 := testutil.Atoi(t, f[3]); r2 != 0 {
				rets = append(rets, r2)
			}
		}
		rets = append(rets, int64(len(l)+1))
	}
	wr = count(pWrite, len(rets))
	for i, r := range rets {
		want(fmt.Sprintf("write %d", i), wr[i], 0, []int64{1, r}, nil)
	}

	// The workload's two opens come first; /bin/true's loader opens more.
	op := byProbe[pOpenat]
	if len(op) < 2 {
		t.Fatalf("openat: %d samples", len(op))
	}
	want("openat /dev/null", op[0], 0, []int64{int64(len("/dev/null")), -100}, map[int]string{0: "/dev/null"})
	want("openat oom_score_adj", op[1], 0, []int64{int64(len("/proc/self/oom_score_adj")), -100},
		map[int]string{0: "/proc/self/oom_score_adj"})

	// prctl(PR_SET_NAME), then exec renames the task once more.
	rn := byProbe[pRename]
	if len(rn) < 1 {
		t.Fatal("task_rename: no samples")
	}
	want("task_rename prctl", rn[0], 0, []int64{int64(len("workload")), int64(len("renamed-task")), oom, int64(pid)},
		map[int]string{0: "workload", 1: "renamed-task"})
	if len(rn) > 1 {
		want("task_rename exec", rn[1], 0, []int64{int64(len("renamed-task")), int64(len("true")), oom, int64(pid)},
			map[int]string{0: "renamed-task", 1: "true"})
	}

	ex := count(pExec, 1)
	want("exec", ex[0], 0, []int64{int64(len("/bin/true")), int64(pid), int64(pid)}, map[int]string{3: "/bin/true"})

	var maxDelay time.Duration
	for _, d := range c.arrived {
		maxDelay = max(maxDelay, d)
	}
	t.Logf("%d samples, %d lines; max delay from event to Drain callback %v", len(samples), len(lines), maxDelay)
	if t.Failed() || os.Getenv("BPFTAPE_TEST_DUMP") != "" {
		for _, raw := range samples {
			t.Log(describe(raw))
		}
	}
}

// TestLoss fills a one-page ring while nobody reads it: every event is
// either in the ring or counted in lost. Staged, a whole batch is lost at
// once, and each of its samples is counted.
func TestLoss(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	for _, tc := range []struct {
		name   string
		opts   Options
		staged bool
	}{
		{"Unstaged", Options{RingSize: uint32(os.Getpagesize()), WakeupBytes: 0}, false},
		{"Staged", Options{RingSize: uint32(os.Getpagesize()), WakeupBytes: 1 << 30}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 2000
			w := startWorkload(t, exe, "burst", "2000")
			objs := load(t, tc.opts)
			if objs.Staging() != tc.staged {
				t.Fatalf("staging %v, want %v", objs.Staging(), tc.staged)
			}
			putSpec(t, objs, 0, spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)))
			attachUprobe(t, exe, "work", objs.ProbeUprobe, 0, w.pid(), false)
			w.run(t)

			rd := newReader(t, objs)
			if err := rd.Flush(); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			comms := 0
			if err := rd.Drain(0, func(raw []byte) error {
				h, err := DecodeHeader(raw)
				if err == nil && h.Class == ClassComm {
					comms++
					return nil
				}
				if comms == 0 {
					t.Errorf("sample %d came before any comm record", Arg(raw, 0))
				}
				got = append(got, Arg(raw, 0))
				return nil
			}); !errors.Is(err, ErrRingFlushed) {
				t.Fatal(err)
			}
			lost, err := objs.LostSamples(1)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("ring %d bytes: %d received, %d lost, %d generated, %d comm records",
				os.Getpagesize(), len(got), lost, n, comms)
			if uint64(len(got))+lost != n {
				t.Errorf("received %d + lost %d != generated %d", len(got), lost, n)
			}
			if lost == 0 || len(got) == 0 {
				t.Errorf("expected both received and lost samples")
			}
			// The first calls fit: work(1, 2, 3) first, then later calls
			// in order. Rings are per CPU: when the workload moves to a
			// CPU whose ring has room, calls after a gap fit there (seen:
			// 1..84, then 914...).
			for i, a := range got {
				if i == 0 && a != 1 || i > 0 && a <= got[i-1] {
					t.Fatalf("sample %d: a = %d after %v", i, a, got[max(0, i-3):i])
				}
			}
		})
	}
}

// TestDeadlineReturnsPending checks the reader behaviour the wake-up policy
// relies on: samples submitted with BPF_RB_NO_WAKEUP wake nobody, yet Drain
// delivers them within its interval, without any wake-up or flush.
func TestDeadlineReturnsPending(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	const ring = 1 << 16

	t.Run("Interval", func(t *testing.T) {
		w := startWorkload(t, exe, "burst", "10")
		// Never wakes; no staging, so that the samples are in the ring.
		objs := load(t, Options{RingSize: ring, WakeupBytes: 2 * ring, StageBytes: -1})
		putSpec(t, objs, 0, spec(1, ClassArgs2, reg(RegDI, 8, true)))
		attachUprobe(t, exe, "work", objs.ProbeUprobe, 0, w.pid(), false)
		rd := newReader(t, objs)
		w.run(t)
		// One comm record, then the samples: one CPU, one task.
		if got, want := rd.AvailableBytes(), 8+CommRecordSize+10*(8+SampleSize(ClassArgs2)); got != want {
			t.Fatalf("available %d bytes, want %d", got, want)
		}

		start := time.Now()
		var n int
		err := rd.Drain(50*time.Millisecond, func(raw []byte) error {
			if h, _ := DecodeHeader(raw); h.Class == ClassComm {
				return nil
			}
			if n == 0 {
				t.Logf("first record after %v (interval 50ms)", time.Since(start))
			}
			if Arg(raw, 0) != uint64(1+n) {
				t.Errorf("record %d: a = %d", n, Arg(raw, 0))
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("Drain returned after %v, before its interval", d)
		}
		if n != 10 || rd.AvailableBytes() != 0 {
			t.Errorf("read %d records, %d bytes left; want 10 and 0", n, rd.AvailableBytes())
		}
	})

	// Staged: the samples (480 bytes) stay in the CPU's stage (1024 bytes),
	// not in the ring, until Drain's pass sends every stage to its ring;
	// only the comm record is in the ring.
	t.Run("Drain", func(t *testing.T) {
		w := startWorkload(t, exe, "burst", "10")
		objs := load(t, Options{RingSize: ring, WakeupBytes: 2 * ring})
		if !objs.Staging() {
			t.Fatalf("no staging: %v", haveRunOnCPU())
		}
		putSpec(t, objs, 0, spec(1, ClassArgs2, reg(RegDI, 8, true)))
		attachUprobe(t, exe, "work", objs.ProbeUprobe, 0, w.pid(), false)
		rd := newReader(t, objs)
		w.run(t)
		if got, want := rd.AvailableBytes(), 8+CommRecordSize; got != want {
			t.Errorf("%d bytes in the rings before a pass, want %d (the comm record)", got, want)
		}
		c := collect(t, rd)
		deadline := time.Now().Add(5 * time.Second)
		const records = 11 // a comm record and 10 samples: one CPU, one task
		for c.count() < records && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := c.count(); n != records {
			t.Errorf("Drain delivered %d of %d records without a wake-up", n, records)
		}
		samples := c.finish(t)
		var maxDelay time.Duration
		for _, d := range c.arrived {
			maxDelay = max(maxDelay, d)
		}
		t.Logf("%d samples, max delay %v (interval %v)", len(samples), maxDelay, DrainInterval)
	})
}

// TestRingMerge records two threads on different CPUs, one of which hops
// between CPUs every 50 calls, and checks that the per-CPU rings come out
// merged: every event once, in time order, each thread's calls in order.
func TestRingMerge(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	if runtime.NumCPU() < 2 {
		t.Skip("skipping: needs 2 CPUs to have 2 rings in use")
	}
	exe := buildWorkload(t)
	const n = 20000
	w := startWorkload(t, exe, "hop", strconv.Itoa(n))
	objs := load(t, Options{})
	putSpec(t, objs, 0, spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)))
	attachUprobe(t, exe, "work", objs.ProbeUprobe, 0, w.pid(), false)
	c := collect(t, newReader(t, objs))
	w.run(t)
	samples := c.finish(t)

	next := map[int64]int64{} // by thread number: the next call expected
	tids := map[int64]uint32{}
	cpus := map[int64]map[uint16]bool{0: {}, 1: {}}
	// A program preempted between reading the clock and reserving its
	// record lands behind a later one, even in one ring: time order across
	// threads holds only nearly; each thread's order holds exactly.
	var last uint64
	inversions := 0
	for i, raw := range samples {
		h, err := DecodeHeader(raw)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if h.Time < last {
			inversions++
		}
		last = max(last, h.Time)
		if h.Class == ClassComm {
			continue
		}
		th, call := int64(Arg(raw, 0)), int64(Arg(raw, 1))
		if th != 0 && th != 1 {
			t.Fatalf("record %d: thread %d", i, th)
		}
		if call != next[th] {
			t.Fatalf("record %d: thread %d call %d, want %d", i, th, call, next[th])
		}
		if tids[th] == 0 {
			tids[th] = h.TID
		} else if tids[th] != h.TID {
			t.Fatalf("thread %d: tid %d then %d", th, tids[th], h.TID)
		}
		next[th]++
		cpus[th][h.CPU] = true
	}
	if next[0] != n || next[1] != n {
		t.Errorf("calls recorded: %d and %d, want %d each", next[0], next[1], n)
	}
	if len(cpus[0]) < 2 {
		t.Errorf("the hopping thread ran on CPUs %v only", cpus[0])
	}
	if n, err := objs.LostSamples(1); err != nil || n != 0 {
		t.Errorf("lost %d, %v", n, err)
	}
	if inversions > len(samples)/100 {
		t.Errorf("%d of %d records before an earlier record's time", inversions, len(samples))
	}
	t.Logf("%d records, %d out of time order; hopping thread on CPUs %v", len(samples), inversions, cpus[0])
}

// TestCommRename records a process that renames itself between two calls,
// with task:task_rename recorded too (its programs run before the kernel
// changes the comm): each call must carry the comm the task had then.
func TestCommRename(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	tracefs := requireTracefs(t)
	w := startWorkload(t, exe, "rename")
	objs := load(t, Options{FilterTgid: uint32(w.pid())})
	putSpec(t, objs, 0, spec(1, ClassArgs1, reg(RegDI, 8, true)))
	rename := tpFormat(t, tracefs, "task", "task_rename")
	putSpec(t, objs, 1, spec(2, ClassArgs1, rename["pid"].arg(KindTPField)))
	attachUprobe(t, exe, "work", objs.ProbeUprobe, 0, w.pid(), false)
	attachTracepoint(t, "task", "task_rename", objs.ProbeTracepoint, 1)
	c := collect(t, newReader(t, objs))
	w.run(t)
	comms := map[uint32]string{}
	got := map[int64]string{}
	renames := 0
	for _, raw := range c.finish(t) {
		h, err := DecodeHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Class == ClassComm:
			comms[h.TID] = string(Comm(raw))
		case h.ProbeID == 1:
			got[int64(Arg(raw, 0))] = comms[h.TID]
		case h.ProbeID == 2:
			renames++
		}
	}
	if renames != 1 || got[1] != "workload" || got[2] != "renamed-task" {
		t.Errorf("%d renames recorded; call 1 by %q, call 2 by %q; want 1, workload, renamed-task", renames, got[1], got[2])
	}
}
