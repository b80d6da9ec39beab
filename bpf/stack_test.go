package bpf

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/internal/testutil"
)

// execRange returns the runtime address range of exe's executable mapping
// in process pid, and the file offset it maps from.
func execRange(t *testing.T, pid int, exe string) (lo, hi, off uint64) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || !strings.Contains(fs[1], "x") || fs[5] != exe {
			continue
		}
		a, b, _ := strings.Cut(fs[0], "-")
		lo, _ = strconv.ParseUint(a, 16, 64)
		hi, _ = strconv.ParseUint(b, 16, 64)
		off, _ = strconv.ParseUint(fs[2], 16, 64)
		return lo, hi, off
	}
	t.Fatalf("no executable mapping of %s in process %d", exe, pid)
	return 0, 0, 0
}

// textSymbolizer names the functions of an executable mapping from the
// ELF symbol table, independently of package stacktable.
type textSymbolizer struct {
	lo, hi, off uint64
	progs       []*elf.Prog
	funcs       []elf.Symbol
}

func newTextSymbolizer(t *testing.T, exe string, lo, hi, off uint64) *textSymbolizer {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	z := &textSymbolizer{lo: lo, hi: hi, off: off}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			z.progs = append(z.progs, p)
		}
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			z.funcs = append(z.funcs, s)
		}
	}
	return z
}

// symbolize returns the function that holds the runtime address pc and
// pc's offset in it; "" if none does.
func (z *textSymbolizer) symbolize(pc uint64) (string, uint64) {
	if pc < z.lo || pc >= z.hi {
		return "", 0
	}
	fileOff := pc - z.lo + z.off
	for _, p := range z.progs {
		if fileOff < p.Off || fileOff >= p.Off+p.Filesz {
			continue
		}
		addr := fileOff - p.Off + p.Vaddr
		for _, s := range z.funcs {
			if addr >= s.Value && addr < s.Value+s.Size {
				return s.Name, addr - s.Value
			}
		}
	}
	return "", 0
}

// TestUprobeStacks: a uprobe with Ustack and Kstack sends a user and a
// kernel stack record ahead of each sample, with the sample's tid and
// time. The user stack's innermost frame is the probed function's first
// instruction, and the record of a probe on the function's entry carries
// the return address into the caller (SpecStackEntry), another function of
// the binary.
func TestUprobeStacks(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	const n = 200
	w := startWorkload(t, exe, "burst", strconv.Itoa(n))
	objs := load(t, Options{RingSize: 1 << 22, FilterTgid: uint32(w.pid())})
	s := spec(pWork, ClassArgs1, reg(RegDI, 8, true))
	s.Ustack, s.Kstack, s.Flags = MaxStack, 16, SpecStackEntry
	putSpec(t, objs, 0, s)
	prog, cookie, err := objs.UprobeProgram(0)
	if err != nil {
		t.Fatal(err)
	}
	attachUprobe(t, exe, "work", prog, cookie, w.pid(), false)
	lo, hi, off := execRange(t, w.pid(), exe)
	syms := newTextSymbolizer(t, exe, lo, hi, off)

	c := collect(t, newReader(t, objs))
	w.run(t)
	samples := c.finish(t)
	var user, kernel [][]byte
	events := 0
	for i, raw := range samples {
		h, err := DecodeHeader(raw)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		switch {
		case h.Class == ClassStack && h.Flags&StackRecKernel != 0:
			kernel = append(kernel, raw)
		case h.Class == ClassStack:
			user = append(user, raw)
		case h.Class != ClassComm:
			events++
			// The two stack records of this sample came right before it.
			if len(user) != events || len(kernel) != events {
				t.Fatalf("sample %d: %d user and %d kernel stack records before it", events, len(user), len(kernel))
			}
			for _, st := range [][]byte{user[events-1], kernel[events-1]} {
				sh, _ := DecodeHeader(st)
				if sh.Time != h.Time || sh.TID != h.TID || StackProbe(st) != h.ProbeID {
					t.Fatalf("stack record %+v does not belong to sample %+v", sh, h)
				}
			}
		}
	}
	if events != n {
		t.Fatalf("%d samples, want %d", events, n)
	}
	// Every user stack starts at work's first instruction, where the
	// uprobe is, and its return address is in work's caller.
	for i, st := range user {
		u, _ := DecodeHeader(st)
		if u.Nargs < 2 || u.Flags&StackRecRetaddr == 0 {
			t.Fatalf("user stack %d: %d frames, flags %#x", i, u.Nargs, u.Flags)
		}
		leaf, ret := StackFrame(st, 0), StackRetaddr(st)
		if name, at := syms.symbolize(leaf); name != "work" || at != 0 {
			t.Fatalf("user stack %d: leaf frame %#x is %s+%#x, want work+0x0 (text at %#x-%#x)", i, leaf, name, at, lo, hi)
		}
		if name, _ := syms.symbolize(ret); name == "" || name == "work" {
			t.Fatalf("user stack %d: return address %#x is in %q, want work's caller (text at %#x-%#x)", i, ret, name, lo, hi)
		}
	}
	u, _ := DecodeHeader(user[0])
	leaf, ret := StackFrame(user[0], 0), StackRetaddr(user[0])
	caller, at := syms.symbolize(ret)
	t.Logf("user stack of work (text at %#x): %d frames, leaf %#x, return address %#x (%s+%#x), frame 1 %#x (the kernel added the caller itself: %v)",
		lo, u.Nargs, leaf, ret, caller, at, StackFrame(user[0], 1), StackFrame(user[0], 1) == ret)
	k, _ := DecodeHeader(kernel[0])
	// A uprobe runs on user registers: its kernel stack is empty.
	t.Logf("kernel stack of a uprobe: %d frames, flags %#x", k.Nargs, k.Flags)
}

// TestProfileProgram samples a busy shell with a perf event on every CPU:
// samples arrive with their stacks, at about the frequency asked for.
func TestProfileProgram(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	objs := load(t, Options{RingSize: 1 << 22, FilterTgid: uint32(busy.Process.Pid)})
	s := spec(7, ClassArgs0)
	s.Ustack, s.Kstack = MaxStack, MaxStack
	putSpec(t, objs, 3, s)
	prog, err := objs.PerfEventProgram(3)
	if err != nil {
		t.Fatal(err)
	}
	ncpu := runtime.NumCPU()
	const hz = 499
	for cpu := range ncpu {
		l, err := AttachPerfEvent(prog, cpu, hz)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	c := collect(t, newReader(t, objs))
	cpu0 := procCPUTime(t, busy.Process.Pid)
	time.Sleep(500 * time.Millisecond)
	ran := procCPUTime(t, busy.Process.Pid) - cpu0
	samples := c.finish(t)
	events, withUser := 0, 0
	for _, raw := range samples {
		h, err := DecodeHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		if h.Class == ClassStack && h.Flags&StackRecKernel == 0 && h.Nargs > 0 {
			withUser++
		}
		if h.Class == ClassArgs0 && h.ProbeID == 7 {
			events++
		}
	}
	// One sample per 1/hz of the CPU time the busy thread got: about 250
	// in 0.5 s on an idle machine, fewer on a busy one. The clock ticks of
	// /proc are 10 ms: allow for one either side.
	want := ran.Seconds() * hz
	lo, hi := (ran.Seconds()-0.01)*hz/2, (ran.Seconds()+0.01)*hz*1.5+2
	if ran < 50*time.Millisecond || float64(events) < lo || float64(events) > hi || withUser < events/2 {
		t.Fatalf("%d samples (%d with a user stack) in 0.5 s at %d Hz; the thread ran %v, about %.0f samples", events, withUser, hz, ran, want)
	}
	if _, err := AttachPerfEvent(prog, 0, 1<<40); err == nil {
		t.Error("a 2^40 Hz perf event was accepted")
	}
}

// procCPUTime is the user and system CPU time process pid has used, from
// /proc/PID/stat (in clock ticks of 10 ms).
func procCPUTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the comm, which ends at the last ')': state is
	// field 3, utime 14 and stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
