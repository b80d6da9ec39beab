package bpf

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpftape/bpftape/internal/testutil"
)

// variant is one way to load the recording program, for benchmarks that
// compare loads side by side: env is set while it loads.
type variant struct {
	name string
	env  map[string]string
	spec ProbeSpec
	// noCookies loads a copy of the program with the spec as constants
	// (Options.NoCookies), as on kernels before 5.15.
	noCookies bool
	// uses loads the program with only the code the spec needs
	// (Options.Uses = UsesOf(spec)), as recording does; else all of it.
	uses bool
	// rejects: the spec's filter rejects every event (none is recorded,
	// every one is counted as filtered); else every event is recorded.
	rejects bool
	// stage is Options.StageBytes.
	stage int
}

// benchVariants loads each variant (with cookies, as recording does,
// unless noCookies), attaches all of them to the workload's work function
// at once, and runs `workload burst` b.N times, the attach order rotating
// each round. It reports each variant's BPF run time per event
// (kernel.bpf_stats) and checks what each recorded.
//
// The kernel runs a uprobe's programs last attached first, and the first
// one runs on colder caches: an empty program cost 25 ns per run when it
// ran last of 15 programs and 75 ns when it ran first (6.18, this VM).
// BenchmarkFilter's filter-passed probe, attached last, seemed to cost 2.4
// times a recorded one, 1.17 times once rotated. So an empty program is
// attached after the variants, to run first and take the breakpoint's
// share of that; the first variant still touches the maps first, which
// the rotation spreads over all of them. A single variant runs alone, as
// recording runs (BenchmarkRecord).
func benchVariants(b *testing.B, vs []variant) []float64 {
	testutil.RequireBPF(b, CheckFeatures)
	exe := buildWorkload(b)
	events := benchEvents(b)
	enableRunTimeStats(b)
	runtime, runs := make([]float64, len(vs)), make([]float64, len(vs))
	for round := range b.N {
		b.StopTimer()
		w := startWorkload(b, exe, "burst", strconv.Itoa(events))
		type loaded struct {
			objs *Objects
			prog *ebpf.Program
			rd   *Ring
			got  int64
			done chan error
		}
		ls := make([]*loaded, len(vs))
		for k := range vs {
			i := (k + round) % len(vs)
			v := vs[i]
			for name, val := range v.env {
				b.Setenv(name, val)
			}
			var uses *Uses
			if v.uses {
				u := UsesOf(&v.spec)
				uses = &u
			}
			objs, err := Load(Options{RingSize: 16 << 20, WakeupBytes: 1 << 20, NoCookies: v.noCookies, Uses: uses, StageBytes: v.stage})
			for name := range v.env {
				os.Unsetenv(name)
			}
			if err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
			if err := objs.Arm(true); err != nil {
				b.Fatal(err)
			}
			putSpec(b, objs, 0, v.spec)
			prog, cookie, err := objs.UprobeProgram(0)
			if err != nil {
				b.Fatal(err)
			}
			attachUprobe(b, exe, "work", prog, cookie, w.pid(), false)
			rd, err := objs.NewRing()
			if err != nil {
				b.Fatal(err)
			}
			l := &loaded{objs: objs, prog: prog, rd: rd, done: make(chan error, 1)}
			ls[i] = l
			go func() {
				for {
					err := l.rd.Drain(DrainInterval, func(raw []byte) error {
						h, err := DecodeHeader(raw)
						if err == nil && h.Class != ClassComm && h.ProbeID == v.spec.ProbeId {
							l.got++
						}
						return err
					})
					if err != nil {
						if errors.Is(err, ErrRingFlushed) {
							err = nil
						}
						l.done <- err
						return
					}
				}
			}()
		}
		if len(vs) > 1 { // the warm-up program
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL",
				Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			attachUprobe(b, exe, "work", p, 0, w.pid(), false)
		}
		b.StartTimer()
		w.run(b)
		b.StopTimer()
		for i, l := range ls {
			if err := l.rd.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := <-l.done; err != nil {
				b.Fatal(err)
			}
			s, err := l.prog.Stats()
			if err != nil {
				b.Fatal(err)
			}
			runtime[i] += float64(s.Runtime.Nanoseconds())
			runs[i] += float64(s.RunCount)
			want, wantFiltered := int64(events), uint64(0)
			if vs[i].rejects {
				want, wantFiltered = 0, uint64(events)
			}
			filtered, err := l.objs.FilteredSamples(vs[i].spec.ProbeId)
			if err != nil {
				b.Fatal(err)
			}
			if l.got != want || filtered != wantFiltered {
				b.Errorf("%s recorded %d events and filtered %d, want %d and %d", vs[i].name, l.got, filtered, want, wantFiltered)
			}
			l.rd.Close()
			l.objs.Close()
		}
	}
	ns := make([]float64, len(vs))
	for i, v := range vs {
		ns[i] = runtime[i] / runs[i]
		b.ReportMetric(ns[i], v.name+"-ns/event")
	}
	return ns
}

// BenchmarkCommRead compares the two ways the program reads the comm it
// checks on every event: plain loads from bpf_get_current_task_btf's
// pointer, and bpf_probe_read_kernel (BPFTAPE_NO_TASK_BTF=1, what kernels
// before 5.11 do). Run it with
//
//	go test -run '^$' -bench CommRead -benchtime 4x ./bpf/
func BenchmarkCommRead(b *testing.B) {
	flat := spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))
	benchVariants(b, []variant{
		{name: "task-btf", spec: flat},
		{name: "probe-read", env: map[string]string{"BPFTAPE_NO_TASK_BTF": "1"}, spec: flat},
	})
}

// BenchmarkStaging compares sending every sample to the ring on its own
// (StageBytes -1: a stage of one record, copied with bpf_ringbuf_output)
// with staging it per CPU and sending batches of 512 to 3072 bytes
// (Options.StageBytes), recording the same two registers. The reserve and
// submit per sample that staging replaced is in the binaries before it.
// Run it with
//
//	go test -run '^$' -bench Staging -benchtime 4x ./bpf/
func BenchmarkStaging(b *testing.B) {
	flat := spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))
	benchVariants(b, []variant{
		{name: "one-record", spec: flat, stage: -1},
		{name: "stage-512", spec: flat, stage: 512},
		{name: "stage-1024", spec: flat, stage: 1024},
		{name: "stage-2048", spec: flat, stage: 2048},
		{name: "stage-3072", spec: flat, stage: 3072},
	})
}

// BenchmarkCookies compares the shared program, which finds its spec by the
// attachment's cookie, with a copy whose spec is a load-time constant
// (kernels without cookies), recording the same two registers. Run it with
//
//	go test -run '^$' -bench Cookies -benchtime 4x ./bpf/
func BenchmarkCookies(b *testing.B) {
	flat := spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))
	benchVariants(b, []variant{
		{name: "cookie", spec: flat},
		{name: "fixed-spec", spec: flat, noCookies: true},
	})
}

// BenchmarkUses compares the program with the code of every size class,
// the filters and the stacks with one that holds only what its spec needs
// (Options.Uses), recording the same two registers. Run it with
//
//	go test -run '^$' -bench Uses -benchtime 6x ./bpf/
func BenchmarkUses(b *testing.B) {
	flat := spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))
	ns := benchVariants(b, []variant{
		{name: "all-code", spec: flat},
		{name: "spec-code", spec: flat, uses: true},
	})
	b.ReportMetric(ns[1]/ns[0], "spec-code/all-code")
}

// BenchmarkRecord is what recording pays per event, as it records: one
// probe (the shared program, its spec found by cookie) recording two
// registers, the only program on the function. Compare trees with it:
// one program alone runs on cold caches, as in production. Run it with
//
//	go test -run '^$' -bench 'Record$' -benchtime 4x ./bpf/
func BenchmarkRecord(b *testing.B) {
	benchVariants(b, []variant{{name: "recorded", spec: spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))}})
}
