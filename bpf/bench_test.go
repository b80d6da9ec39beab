package bpf

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/internal/testutil"
)

// BenchmarkWakeup compares wake-up policies on a burst of uprobe events
// (BPFTAPE_BENCH_EVENTS, default 1M) into a 1 MiB ring drained by a reader
// that also polls every DrainInterval. Run it with
//
//	go test -run '^$' -bench Wakeup -benchtime 1x ./bpf/
//
// Metrics: events/s as timed by the workload (producer throughput, uprobe
// overhead included), lost samples, batches (times the reader found the ring
// empty, i.e. went back to waiting), and CPU time per event of the producer
// (workload user+sys, which includes the BPF program and wake-ups) and of the
// consumer (this process). With BPFTAPE_BENCH_STATS=1 it also reports the
// BPF program's own run time per event (kernel.bpf_stats; this adds two clock
// reads per run).
func BenchmarkWakeup(b *testing.B) {
	testutil.RequireBPF(b, CheckFeatures)
	exe := buildWorkload(b)
	events := benchEvents(b)
	const ring = 1 << 20
	for _, m := range []struct {
		name   string
		wakeup uint64
	}{
		{"every-event", 0},
		{"kernel-default", WakeupKernelDefault},
		{"quarter-ring", ring / 4},
		{"timer-only", 2 * ring},
	} {
		b.Run(m.name, func(b *testing.B) {
			var sum burstResult
			for range b.N {
				r := runBurst(b, exe, ring, m.wakeup, events)
				sum.add(r)
			}
			n := float64(b.N)
			b.ReportMetric(float64(sum.events)/sum.elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(sum.lost)/n, "lost")
			b.ReportMetric(float64(sum.batches)/n, "batches")
			b.ReportMetric(float64(sum.producerCPU)/float64(sum.events), "producer-ns/event")
			b.ReportMetric(float64(sum.consumerCPU)/float64(sum.events), "consumer-ns/event")
			if sum.progRuns > 0 {
				b.ReportMetric(float64(sum.progTime)/float64(sum.progRuns), "bpf-ns/event")
			}
		})
	}
}

type burstResult struct {
	events, received, lost, batches int64
	elapsed                         time.Duration // the workload's own timing of its loop
	producerCPU, consumerCPU        time.Duration
	progTime                        time.Duration // BPF program run time, with BPFTAPE_BENCH_STATS=1
	progRuns                        int64
}

func (s *burstResult) add(r burstResult) {
	s.events += r.events
	s.received += r.received
	s.lost += r.lost
	s.batches += r.batches
	s.elapsed += r.elapsed
	s.producerCPU += r.producerCPU
	s.consumerCPU += r.consumerCPU
	s.progTime += r.progTime
	s.progRuns += r.progRuns
}

func cpuTime(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func selfCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runBurst(b *testing.B, exe string, ring uint32, wakeup uint64, events int) burstResult {
	b.StopTimer()
	if os.Getenv("BPFTAPE_BENCH_STATS") == "1" {
		st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
	}
	w := startWorkload(b, exe, "burst", strconv.Itoa(events))
	objs, err := Load(Options{RingSize: ring, WakeupBytes: wakeup})
	if err != nil {
		b.Fatal(err)
	}
	defer objs.Close()
	if err := objs.Arm(true); err != nil {
		b.Fatal(err)
	}
	putSpec(b, objs, 0, spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)))
	attachUprobe(b, exe, "work", objs.ProbeUprobe, 0, w.pid(), false)
	rd, err := objs.NewRing()
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()

	type result struct {
		received, batches int64
		err               error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for {
			err := rd.Drain(DrainInterval, func(raw []byte) error {
				h, err := DecodeHeader(raw)
				if err == nil && h.Class != ClassComm {
					r.received++
				}
				return err
			})
			switch {
			case err == nil:
			case errors.Is(err, ErrRingFlushed):
				r.batches = int64(rd.Reads())
				done <- r
				return
			default:
				r.err = err
				done <- r
				return
			}
		}
	}()

	cpu0 := selfCPU(b)
	b.StartTimer()
	lines := w.run(b)
	b.StopTimer()
	if err := rd.Flush(); err != nil {
		b.Fatal(err)
	}
	r := <-done
	cpu1 := selfCPU(b)
	if r.err != nil {
		b.Fatal(r.err)
	}
	lost, err := objs.LostSamples(1)
	if err != nil {
		b.Fatal(err)
	}
	stats, err := objs.ProbeUprobe.Stats()
	if err != nil {
		b.Fatal(err)
	}
	if len(lines) != 1 {
		b.Fatalf("workload output %q", lines)
	}
	f := fields(lines[0], 4)
	res := burstResult{
		events:      testutil.Atoi(b, f[1]),
		received:    r.received,
		lost:        int64(lost),
		batches:     r.batches,
		elapsed:     time.Duration(testutil.Atoi(b, f[2])),
		producerCPU: cpuTime(w.cmd.ProcessState.SysUsage().(*syscall.Rusage)),
		consumerCPU: cpu1 - cpu0,
		progTime:    stats.Runtime,
		progRuns:    int64(stats.RunCount),
	}
	if res.received+res.lost != res.events {
		b.Errorf("received %d + lost %d != %d events", res.received, res.lost, res.events)
	}
	b.Logf("wakeup %d: %d events in %v (%.0f/s), received %d, lost %d, batches %d, producer cpu %v, consumer cpu %v",
		wakeup, res.events, res.elapsed, float64(res.events)/res.elapsed.Seconds(), res.received, res.lost,
		res.batches, res.producerCPU, res.consumerCPU)
	b.StartTimer()
	return res
}
