package bpf

import (
	"errors"
	"math/bits"
	"slices"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/bpftape/bpftape/internal/testutil"
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
// 190-287 (two runs). The stage_32 cases append each event's 32-byte
// sample to a per-CPU buffer and bpf_ringbuf_output the buffer once every
// 128 (flush_4096) or 32 (flush_1024) events: 212-232 and 192-219 ns,
// against 299-315 for the per-CPU lookup, 32-byte reserve, four stores and
// submit they replace (lookup_reserve_submit_32; three runs).
//
// The cost is in memory first touched in the event (that VM has page-table
// isolation and no PCID, so every uprobe trap flushes the TLB), not
// in instructions. In one run: empty 72 ns; the first load from a small
// array, as the recorder reads armed, 106 (global_read); a per-CPU lookup
// after it only 8 more (global_read_then_lookup); eight more 16 KiB pages of
// JITed code on the path 53 more, about 7 a page (pid_tgid_8_pages_more
// against pid_tgid_1_page); bpf_ktime_get_boot_ns 90-135 more
// (global_read_then_ktime, ktime_boot). So no program that reads a global
// can cost 1.1x the empty one there, and the clock, which an in-kernel
// histogram does not read, is the largest single cost of a recorded event.
// Run it with
//
//	go test -run '^$' -bench HelperCost -benchtime 1x ./bpf/
//
// BPFTAPE_BENCH_EVENTS sets the calls (default 1M).
func BenchmarkHelperCost(b *testing.B) {
	testutil.RequireBPF(b, CheckFeatures)
	exe := buildWorkload(b)
	events := benchEvents(b)
	enableRunTimeStats(b)
	// Each case that uses the ring ("ring" references) gets an empty one of
	// its own, big enough for events 64-byte records: a ring filled by an
	// earlier case would make reserve and output fail, a cheaper path.
	ringSpec := &ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: max(64<<20, uint32(1)<<bits.Len64(uint64(events)*72-1))}
	percpu, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4096, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer percpu.Close()
	// per-CPU staging buffers: n bytes of samples, then an 8-byte count
	staged := map[int32]*ebpf.Map{}
	for _, n := range []int32{1024, 4096} {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(n) + 8, MaxEntries: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		staged[n] = m
	}

	// a small array, as a program's .bss is, read as the recorder reads
	// armed: the first map memory of the event
	global, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 64, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer global.Close()
	globalRead := asm.Instructions{asm.LoadMapValue(asm.R1, global.FD(), 0), asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord)}

	ret := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	call := func(fn asm.BuiltinFunc) asm.Instructions { return append(asm.Instructions{fn.Call()}, ret...) }
	// program joins blocks and ends with the "out" label that they jump to.
	program := func(blocks ...asm.Instructions) asm.Instructions {
		var p asm.Instructions
		for _, b := range blocks {
			p = append(p, b...)
		}
		return append(p, asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
	}
	// lookupValue: key 0 of the per-CPU array m into R0, or to out
	lookupValue := func(m *ebpf.Map) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
		}
	}
	// storeWords: R1 into the first words words at base
	storeWords := func(base asm.Register, words int) asm.Instructions {
		var p asm.Instructions
		for i := range words {
			p = append(p, asm.StoreMem(base, int16(8*i), asm.R1, asm.DWord))
		}
		return p
	}
	// reserve n bytes, store words words, submit with BPF_RB_NO_WAKEUP
	reserve := func(n int32, words int) asm.Instructions {
		return append(append(asm.Instructions{
			asm.LoadMapPtr(asm.R1, 0).WithReference("ring"),
			asm.Mov.Imm(asm.R2, n),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
		}, storeWords(asm.R0, words)...),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Mov.Imm(asm.R2, 1),
			asm.FnRingbufSubmit.Call(),
		)
	}
	// bpf_ringbuf_output of n bytes of a per-CPU array value
	output := func(n int32) asm.Instructions {
		return program(lookupValue(percpu), asm.Instructions{
			asm.LoadMapPtr(asm.R1, 0).WithReference("ring"),
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.Mov.Imm(asm.R3, n),
			asm.Mov.Imm(asm.R4, 1),
			asm.FnRingbufOutput.Call(),
		})
	}
	// append a 32-byte sample (4 words) to a per-CPU buffer of n bytes
	// whose count is at offset n; when it is full, bpf_ringbuf_output the
	// whole buffer with BPF_RB_NO_WAKEUP and store the sample at offset 0,
	// so one output in n/32 events
	stage := func(n int32) asm.Instructions {
		return program(lookupValue(staged[n]), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R0),
			asm.LoadMem(asm.R1, asm.R6, int16(n), asm.DWord),
			asm.JLE.Imm(asm.R1, n-32, "store"), // bounds the offset for the verifier
			asm.LoadMapPtr(asm.R1, 0).WithReference("ring"),
			asm.Mov.Reg(asm.R2, asm.R6),
			asm.Mov.Imm(asm.R3, n),
			asm.Mov.Imm(asm.R4, 1),
			asm.FnRingbufOutput.Call(),
			asm.Mov.Imm(asm.R1, 0),
			asm.Mov.Reg(asm.R2, asm.R6).WithSymbol("store"),
			asm.Add.Reg(asm.R2, asm.R1),
		}, storeWords(asm.R2, 4), asm.Instructions{
			asm.Add.Imm(asm.R1, 32),
			asm.StoreMem(asm.R6, int16(n), asm.R1, asm.DWord),
		})
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
	// codePages: n branches, each over 16 KiB of JITed code that never
	// runs (the verifier cannot tell: the condition is on the pid)
	codePages := func(n int) asm.Instructions {
		p := asm.Instructions{asm.FnGetCurrentPidTgid.Call(), asm.Mov.Reg(asm.R6, asm.R0)}
		for i := range n {
			l := "over" + strconv.Itoa(i)
			p = append(p, asm.JNE.Imm(asm.R6, 0, l))
			for j := range 16384 / 5 { // mov esi, imm32: 5 bytes of x86
				p = append(p, asm.Mov.Imm32(asm.R1, int32(j)))
			}
			p = append(p, asm.Mov.Imm(asm.R1, 0).WithSymbol(l))
		}
		return program(p)
	}
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
		{"percpu_lookup", program(lookupValue(percpu))},
		{"global_read", program(globalRead)},
		{"global_read_then_lookup", program(globalRead, lookupValue(percpu))},
		{"global_read_then_ktime", program(globalRead, asm.Instructions{asm.FnKtimeGetBootNs.Call()})},
		{"pid_tgid_1_page", codePages(0)},
		{"pid_tgid_8_pages_more", codePages(8)},
		{"reserve_submit_32", program(reserve(32, 1))},
		{"reserve_submit_64", program(reserve(64, 1))},
		{"output_32", output(32)},
		{"output_4096", output(4096)},
		// a per-CPU array lookup (as the recorder does for its per-CPU
		// state), then a whole 32-byte sample reserved, stored, submitted
		{"lookup_reserve_submit_32", program(lookupValue(percpu), reserve(32, 4))},
		{"stage_32_flush_4096", stage(4096)},
		{"stage_32_flush_1024", stage(1024)},
	}
	var runtime, runs = make([]float64, len(cases)), make([]float64, len(cases))
	for range b.N {
		for i, c := range cases {
			b.StopTimer()
			insns := slices.Clone(c.insns)
			ring, err := ebpf.NewMap(ringSpec)
			if err != nil {
				b.Fatal(err)
			}
			if err := insns.AssociateMap("ring", ring); errors.Is(err, asm.ErrUnreferencedSymbol) {
				ring.Close()
				ring = nil
			} else if err != nil {
				b.Fatal(err)
			}
			w := startWorkload(b, exe, "burst", strconv.Itoa(events))
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "cost", Type: ebpf.Kprobe, Instructions: insns, License: "GPL"})
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
			if ring != nil {
				rd, err := ringbuf.NewReader(ring)
				if err != nil {
					b.Fatal(err)
				}
				if rd.BufferSize()-rd.AvailableBytes() < 4096+8 {
					b.Logf("%s: the ring filled; part of its calls are failed reserves or outputs", c.name)
				}
				rd.Close()
				ring.Close()
			}
			p.Close() // the link holds it until cleanup; the workload has exited
		}
	}
	for i, c := range cases {
		b.ReportMetric(runtime[i]/runs[i], c.name+"-ns")
	}
}
