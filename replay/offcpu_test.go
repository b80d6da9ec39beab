package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestOffCPUMissingSwitchIn: a thread's time off CPU runs from its
// switch-out to the next event that switches it in. A switch-out that
// follows another with no switch-in between (the switch-in was lost, or
// the kernel ran no program for it: on the development VM no tracepoint
// fires for the threads of its pid 1, so a thread they hand the CPU to is
// switched in unseen) leaves out the interval it would have closed, as
// BCC's offcputime does, and is counted and noted.
func TestOffCPUMissingSwitchIn(t *testing.T) {
	kern := []uint64{0xffffffff81000010}
	kid := format.StackID(true, kern)
	probes := []format.Probe{{
		Name: "sched_switch", Kind: "tracepoint", Spec: "t:sched:sched_switch(prev_pid,next_pid,kstack)",
		Fields: []format.Field{{Name: "prev_pid", Type: format.Int32}, {Name: "next_pid", Type: format.Int32}, {Name: "kstack", Type: format.KernelStack}},
	}}
	table := &format.StackTable{
		Stacks:  []format.Stack{{ID: kid, Kernel: true, Frames: kern}},
		Objects: []format.Object{{ID: 1, Path: "[kernel]", Kernel: true}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0xffffffff81000000, Name: "schedule"}},
	}
	sw := func(t int64, tid uint32, comm string, next uint64) row {
		return row{t: t, tid: tid, comm: comm, ints: []uint64{uint64(tid), next, kid}}
	}
	c := writeCaptureStacks(t, probes, table, []row{
		sw(1000, 7, "sleeper", 9), // 7 leaves
		sw(1500, 9, "other", 7),   // 7 back: 500 ns; 9 leaves
		sw(2000, 7, "sleeper", 9), // 7 leaves; 9 back: 500 ns
		// 7 switched in at about 2600, unseen
		sw(3000, 7, "sleeper", 0),   // 7 leaves again: its interval from 2000 is left out
		sw(3400, 0, "swapper/0", 7), // 7 back: 400 ns
	})

	r, _, err := OffCPU(c, StacksOptions{Mode: StacksKernel})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 1400 || r.SwitchInsMissing != 1 {
		t.Errorf("all threads: %d ns off CPU, %d switch-ins missing; want 1400 (500+500+400) and 1", r.Total, r.SwitchInsMissing)
	}
	var notes bytes.Buffer
	r.Notes(&notes)
	if want := "note: 1 of the picked threads' switch-outs followed another with no switch-in between"; !strings.Contains(notes.String(), want) {
		t.Errorf("notes lack %q:\n%s", want, notes.String())
	}

	// Picking the other thread: its interval is whole, nothing is missing.
	r, _, err = OffCPU(c, StacksOptions{Mode: StacksKernel, Rows: RowFilter{Comms: []string{"other"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 500 || r.SwitchInsMissing != 0 {
		t.Errorf("comm other: %d ns off CPU, %d switch-ins missing; want 500 and 0", r.Total, r.SwitchInsMissing)
	}
	notes.Reset()
	r.Notes(&notes)
	if strings.Contains(notes.String(), "switch-in") {
		t.Errorf("notes of a capture with every switch-in: %s", notes.String())
	}
}
