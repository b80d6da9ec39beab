package bpf

import (
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpftape/bpftape/internal/testutils"
)

// BenchmarkHelperCost measures what the building blocks of the recording
// program cost on this host, as BPF run time per call (kernel.bpf_stats):
// small hand-written programs, each attached alone to the workload's work
// function for a run of its own, as a recording's one program runs. The
// blocks' costs are the differences from "empty". On the 6.18 VM these
// were written on, what a block costs is mostly the memory it touches for
// the first time in the event: alone, an empty program cost 81-88 ns, a
// per-CPU map lookup 120-138, a 16-byte bpf_probe_read_kernel of the comm
// 122-128, the same two words loaded from bpf_get_current_task_btf's
// pointer 83-118, bpf_ktime_get_boot_ns 194-221, a ring reserve and submit
// 190-287 (two runs). Run it with
//
//	go test -run '^$' -bench HelperCost -benchtime 1x ./bpf/
//
// BPFTAPE_BENCH_EVENTS sets the calls (default 1M).
func BenchmarkHelperCost(b *testing.B) {
	testutils.RequireBPF(b, CheckFeatures)
	exe := buildWorkload(b)
	events := benchEvents(b)
	enableRunTimeStats(b)
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer ring.Close()
	percpu, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4096, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer percpu.Close()

	ret := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	call := func(fn asm.BuiltinFunc) asm.Instructions { return append(asm.Instructions{fn.Call()}, ret...) }
	// reserve n bytes, store one word, submit with BPF_RB_NO_WAKEUP
	reserve := func(n int32) asm.Instructions {
		return append(asm.Instructions{
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Imm(asm.R2, n),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Mov.Imm(asm.R2, 1),
			asm.FnRingbufSubmit.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		}, asm.Return())
	}
	// bpf_ringbuf_output of n bytes of a per-CPU array value
	output := func(n int32) asm.Instructions {
		return append(asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, percpu.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.Mov.Imm(asm.R3, n),
			asm.Mov.Imm(asm.R4, 1),
			asm.FnRingbufOutput.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		}, asm.Return())
	}
	comm := append(asm.Instructions{
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, 0x800),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, -16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnProbeReadKernel.Call(),
	}, ret...)
	getComm := append(asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, -16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
	}, ret...)
	commOff, err := TaskCommOffset()
	if err != nil {
		b.Fatal(err)
	}
	taskBTF := append(asm.Instructions{
		asm.FnGetCurrentTaskBtf.Call(),
		asm.LoadMem(asm.R1, asm.R0, int16(commOff), asm.DWord),
		asm.LoadMem(asm.R2, asm.R0, int16(commOff+8), asm.DWord),
	}, ret...)
	lookup := append(asm.Instructions{
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, percpu.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
	}, ret...)
	cases := []struct {
		name  string
		insns asm.Instructions
	}{
		{"empty", ret},
		{"pid_tgid", call(asm.FnGetCurrentPidTgid)},
		{"attach_cookie", call(asm.FnGetAttachCookie)},
		{"ktime_boot", call(asm.FnKtimeGetBootNs)},
		{"ktime_mono", call(asm.FnKtimeGetNs)},
		{"smp_processor_id", call(asm.FnGetSmpProcessorId)},
		{"current_task", call(asm.FnGetCurrentTask)},
		{"task_comm_read", comm},
		{"get_current_comm", getComm},
		{"task_btf_comm", taskBTF},
		{"percpu_lookup", lookup},
		{"reserve_submit_32", reserve(32)},
		{"reserve_submit_64", reserve(64)},
		{"output_32", output(32)},
		{"output_4096", output(4096)},
	}
	var runtime, runs = make([]float64, len(cases)), make([]float64, len(cases))
	for range b.N {
		for i, c := range cases {
			b.StopTimer()
			w := startWorkload(b, exe, "burst", strconv.Itoa(events))
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "cost", Type: ebpf.Kprobe, Instructions: c.insns, License: "GPL"})
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			attachUprobe(b, exe, "work", p, uint64(i), w.pid(), false)
			b.StartTimer()
			w.run(b)
			b.StopTimer()
			s, err := p.Stats()
			if err != nil {
				b.Fatal(err)
			}
			runtime[i] += float64(s.Runtime.Nanoseconds())
			runs[i] += float64(s.RunCount)
			p.Close() // the link holds it until cleanup; the workload has exited
		}
	}
	for i, c := range cases {
		b.ReportMetric(runtime[i]/runs[i], c.name+"-ns")
	}
}
