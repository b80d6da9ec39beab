package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintClockFloor checks the line under the program-time table: the
// clock read's cost (the two empty programs' run times apart) and the
// overhead of the empty program that reads it against each hist's, per
// workload, leaving out a workload without both empty programs.
func TestPrintClockFloor(t *testing.T) {
	pts := map[string]map[string]progTime{
		"uprobe": {
			empty:      {runNs: 27.5, overhead: 400},
			emptyClock: {runNs: 50, overhead: 420},
			bcc:        {runNs: 32, overhead: 400},
			bpftrace:   {runNs: 57, overhead: 440},
		},
		"tracepoint": {
			empty:      {runNs: 28, overhead: 20},
			emptyClock: {runNs: 51, overhead: 45},
			bcc:        {runNs: 34, overhead: 30},
		},
		"usdt": {empty: {runNs: 28, overhead: 400}},
	}
	var b bytes.Buffer
	printClockFloor(&b, pts)
	got := b.String()
	for _, want := range []string{
		"uprobe +22.5 ns/run, 1.05× BCC, 0.95× bpftrace",
		"tracepoint +23.0 ns/run, 1.50× BCC\n", // the last workload that ran both
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	if strings.Contains(got, "usdt") {
		t.Errorf("usdt has no clock-read program, yet it is in %q", got)
	}
	if strings.Contains(got, "1.50× BCC, ") {
		t.Errorf("tracepoint has no bpftrace time, yet it has a ratio in %q", got)
	}

	b.Reset()
	printClockFloor(&b, map[string]map[string]progTime{"uprobe": {empty: {runNs: 27}}})
	if b.Len() != 0 {
		t.Errorf("no clock-read program ran, yet it printed %q", b.String())
	}
}
