package main

import (
	"strings"
	"testing"
)

// TestVMTable checks make vmbench's table on two rounds of a row: the
// overheads are over the same round's bare loop, the ratios of medians.
func TestVMTable(t *testing.T) {
	in := `VMBENCH kernel=6.12 start n=1000 rounds=2 cpus=2
VMBENCH kernel=6.12 row=kprobe round=1 tool=bare events=1000 loop_ns=1000000 prog_ns=-
VMBENCH kernel=6.12 row=kprobe round=1 tool=empty events=1000 loop_ns=1100000 prog_ns=50.0
VMBENCH kernel=6.12 row=kprobe round=1 tool=bpftrace events=1000 loop_ns=1400000 prog_ns=200.0
VMBENCH kernel=6.12 row=kprobe round=1 tool=bpftape events=1000 loop_ns=1500000 prog_ns=300.0 tool_cpu_ns=90000
VMBENCH kernel=6.12 row=kprobe round=2 tool=bpftape events=1000 loop_ns=2700000 prog_ns=300.0 tool_cpu_ns=110000
VMBENCH kernel=6.12 row=kprobe round=2 tool=bare events=1000 loop_ns=2000000 prog_ns=-
VMBENCH kernel=6.12 row=kprobe round=2 tool=empty events=1000 loop_ns=2100000 prog_ns=50.0
VMBENCH kernel=6.12 row=kprobe round=2 tool=bpftrace events=1000 loop_ns=2400000 prog_ns=200.0
VMBENCH kernel=6.12 done
`
	var out strings.Builder
	if err := runVMTable(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	// bpftape: 500 and 700 ns over bare, median 600; bpftrace 400.
	for _, want := range []string{"kernel 6.12, 2 vCPU", "100 / 50 / -", "400 / 200 / -", "600 / 300 / 100", "1.50×", "1.50×", "6.00×"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	failed := in + "VMBENCH kernel=6.12 row=fentry round=1 tool=bpftrace error=kfunc,not,supported\n"
	out.Reset()
	if err := runVMTable(strings.NewReader(failed), &out); err == nil || !strings.Contains(out.String(), "kfunc,not,supported") {
		t.Errorf("a failed run: err %v, table:\n%s", err, out.String())
	}
	if err := runVMTable(strings.NewReader("VMBENCH kernel=6.12 row=k round=x tool=bare\n"), &out); err == nil {
		t.Error("a bad round was taken")
	}
}
