package bpf

import "testing"

// BenchmarkFilter measures, side by side in one run, what the BPF program
// costs per event (kernel.bpf_stats run time) for three probes on the same
// function: one that records every event, one whose filter rejects every
// event, and one whose filter passes every event (its sample is built in
// the scratch buffer and copied into the ring); see benchVariants. Run it
// with
//
//	go test -run '^$' -bench Filter -benchtime 4x ./bpf/
//
// BPFTAPE_BENCH_EVENTS sets the calls (default 1M).
func BenchmarkFilter(b *testing.B) {
	const never = 0x7fffffffffff // work's a is never this
	ns := benchVariants(b, []variant{
		{name: "recorded", spec: spec(1, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true))},
		{name: "filtered-out", rejects: true, spec: withFilter(spec(2, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)),
			cmp(PredEq, OperandField, 0, true, never))},
		{name: "filter-passed", spec: withFilter(spec(3, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)),
			cmp(PredNe, OperandField, 0, true, never))},
	})
	b.ReportMetric(ns[1]/ns[0], "filtered-out/recorded")
}
