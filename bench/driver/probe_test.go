package main

import "testing"

// TestRejectAllSpec checks the filters that the progtime diagnostic's
// filtered-out column puts on bpftape's probes.
func TestRejectAllSpec(t *testing.T) {
	for _, c := range []struct {
		p    probe
		want string
	}{
		{probe{kind: "u", bin: "/w", fn: "bench_func", rejectAll: true}, "u:/w:bench_func(arg0)/arg0 == 0xffffffffffff/"},
		{probe{kind: "U", bin: "/w", provider: "p", name: "tick", rejectAll: true}, "U:/w:p:tick(arg0)/arg0 == 0xffffffffffff/"},
		{probe{kind: "ur", bin: "/w", fn: "f", rejectAll: true}, "ur:/w:f(retval)/retval == 0xffffffffffff/"},
		{probe{kind: "t", category: "syscalls", event: "sys_exit_write", rejectAll: true}, "t:syscalls:sys_exit_write(ret)/ret == -999999/"},
		{probe{kind: "u", bin: "/w", fn: "bench_func"}, "u:/w:bench_func(arg0)"},
		{probe{kind: "u", bin: "/w", fn: "bench_req", chain: true, rejectAll: true}, "u:/w:bench_req(req->hdr->size)/req->hdr->size == 0xffffffffffff/"},
	} {
		if got := c.p.bpftapeSpec(); got != c.want {
			t.Errorf("%v: got %q, want %q", c.p, got, c.want)
		}
	}
}
