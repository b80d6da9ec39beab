package bpf

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/internal/testutils"
)

// BenchmarkFilter measures, side by side in one run, what the BPF program
// costs per event (kernel.bpf_stats run time) for three probes on the same
// function: one that records every event, one whose filter rejects every
// event, and one whose filter passes every event (its sample is built in
// the scratch buffer and copied into the ring). Each probe is its own copy
// of the program (Options.NoCookies), so each has its own stats. Run it
// with
//
//	go test -run '^$' -bench Filter -benchtime 1x ./bpf/
//
// BPFTAPE_BENCH_EVENTS sets the calls (default 1M).
func BenchmarkFilter(b *testing.B) {
	testutils.RequireBPF(b, CheckFeatures)
	exe := buildWorkload(b)
	events := 1_000_000
	if s := os.Getenv("BPFTAPE_BENCH_EVENTS"); s != "" {
		var err error
		if events, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	const never = 0x7fffffffffff // work's a is never this
	probes := []struct {
		name string
		spec ProbeSpec
	}{
		{"recorded", spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))},
		{"filtered-out", withFilter(spec(2, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)),
			cmp(PredEq, OperandField, 0, true, never))},
		{"filter-passed", withFilter(spec(3, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)),
			cmp(PredNe, OperandField, 0, true, never))},
	}
	var runtime, runs [3]float64
	for range b.N {
		b.StopTimer()
		w := startWorkload(b, exe, "burst", strconv.Itoa(events))
		objs, err := Load(Options{RingSize: 16 << 20, WakeupBytes: 1 << 20, NoCookies: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := objs.Arm(true); err != nil {
			b.Fatal(err)
		}
		progs := make([]*ebpf.Program, len(probes))
		for i, p := range probes {
			putSpec(b, objs, uint32(i), p.spec)
			prog, cookie, err := objs.UprobeProgram(uint32(i))
			if err != nil {
				b.Fatal(err)
			}
			attachUprobe(b, exe, "work", prog, cookie, w.pid(), false)
			progs[i] = prog
		}
		rd, err := NewRing(objs.RingMaps...)
		if err != nil {
			b.Fatal(err)
		}
		var got [4]int64
		done := make(chan error, 1)
		go func() {
			for {
				err := rd.Drain(DrainInterval, func(raw []byte) error {
					h, err := DecodeHeader(raw)
					if err == nil && h.Class != ClassComm && int(h.ProbeID) < len(got) {
						got[h.ProbeID]++
					}
					return err
				})
				if err != nil {
					if errors.Is(err, ErrRingFlushed) {
						err = nil
					}
					done <- err
					return
				}
			}
		}()
		b.StartTimer()
		w.run(b)
		b.StopTimer()
		if err := rd.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		for i, p := range progs {
			s, err := p.Stats()
			if err != nil {
				b.Fatal(err)
			}
			runtime[i] += float64(s.Runtime.Nanoseconds())
			runs[i] += float64(s.RunCount)
		}
		dropped, err := objs.FilteredSamples(2)
		if err != nil {
			b.Fatal(err)
		}
		if got[1] != int64(events) || got[2] != 0 || got[3] != int64(events) || dropped != uint64(events) {
			b.Errorf("recorded %d, filtered-out %d (%d rejected), filter-passed %d, want %d, 0 (%d), %d",
				got[1], got[2], dropped, got[3], events, events, events)
		}
		rd.Close()
		objs.Close()
	}
	for i, p := range probes {
		b.ReportMetric(runtime[i]/runs[i], p.name+"-ns/event")
	}
	b.ReportMetric(runtime[1]/runtime[0], "filtered-out/recorded")
}
