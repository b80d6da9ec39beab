package bpf

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/internal/testutils"
)

// execRange returns the runtime address range of exe's executable mapping
// in process pid.
func execRange(t *testing.T, pid int, exe string) (lo, hi uint64) {
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
		return lo, hi
	}
	t.Fatalf("no executable mapping of %s in process %d", exe, pid)
	return 0, 0
}

// TestUprobeStacks: a uprobe with Ustack and Kstack sends a user and a
// kernel stack record ahead of each sample, with the sample's tid and
// time. The user stack starts at the probed function, in the binary, and
// the record of a probe on the function's entry carries the return address
// into the caller (SpecStackEntry), which is in the binary too.
func TestUprobeStacks(t *testing.T) {
	testutils.RequireBPF(t, CheckFeatures)
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
	lo, hi := execRange(t, w.pid(), exe)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	var workOff uint64
	for _, sym := range syms {
		if sym.Name == "work" {
			workOff = sym.Value
		}
	}

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
	u, _ := DecodeHeader(user[0])
	if u.Nargs < 2 || u.Flags&StackRecRetaddr == 0 {
		t.Fatalf("user stack: %d frames, flags %#x", u.Nargs, u.Flags)
	}
	leaf, ret := StackFrame(user[0], 0), StackRetaddr(user[0])
	if leaf < lo || leaf >= hi || ret < lo || ret >= hi {
		t.Errorf("leaf frame %#x or return address %#x outside the binary's text %#x-%#x", leaf, ret, lo, hi)
	}
	t.Logf("user stack of work (text at %#x, work at file address %#x): %d frames, leaf %#x, return address %#x, frame 1 %#x (the kernel added the caller itself: %v)",
		lo, workOff, u.Nargs, leaf, ret, StackFrame(user[0], 1), StackFrame(user[0], 1) == ret)
	k, _ := DecodeHeader(kernel[0])
	// A uprobe runs on user registers: its kernel stack is empty.
	t.Logf("kernel stack of a uprobe: %d frames, flags %#x", k.Nargs, k.Flags)
}

// TestProfileProgram samples a busy shell with a perf event on every CPU:
// samples arrive with their stacks, at about the frequency asked for.
func TestProfileProgram(t *testing.T) {
	testutils.RequireBPF(t, CheckFeatures)
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
	time.Sleep(500 * time.Millisecond)
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
	// 0.5 s of one busy thread at 499 Hz: about 250 samples.
	if events < 100 || events > 2*hz || withUser < events/2 {
		t.Fatalf("%d samples (%d with a user stack) in 0.5 s at %d Hz", events, withUser, hz)
	}
	if _, err := AttachPerfEvent(prog, 0, 1<<40); err == nil {
		t.Error("a 2^40 Hz perf event was accepted")
	}
}
