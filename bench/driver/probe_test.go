package main

import (
	"strings"
	"testing"
)

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

// TestChainNote checks that the chain row is set against the uprobe row
// with each row's empty program taken out.
func TestChainNote(t *testing.T) {
	mk := func(name string, empty0, bcc0, bpftape0 float64) *row {
		r := &row{workload: name, threads: "1T", chain: name == "chain", cells: map[string]*cell{}}
		for _, tool := range tools {
			r.cells[tool] = newCell()
		}
		r.cells[empty].overhead = []float64{empty0}
		r.cells[bcc].overhead = []float64{bcc0}
		r.cells[bpftape].overhead = []float64{bpftape0}
		return r
	}
	got := chainNote([]*row{mk("uprobe", 6000, 6100, 6400), mk("chain", 5000, 5150, 5500)})
	for _, want := range []string{"BCC hist 150 vs 100", "bpftape record 500 vs 400"} {
		if !strings.Contains(got, want) {
			t.Errorf("chainNote: %q lacks %q", got, want)
		}
	}
	if chainNote([]*row{mk("uprobe", 1, 2, 3)}) != "" {
		t.Error("a note without a chain row")
	}
}

// TestParseProbe checks that every kind the empty program takes parses and
// prints back as it was spelled, and that malformed ones are refused.
func TestParseProbe(t *testing.T) {
	for _, s := range []string{"u:/w:bench_func", "ur:/w:bench_ret", "U:/w:p:tick", "t:syscalls:sys_exit_write",
		"profile:hz:99", "k:vfs_read", "kr:vfs_read", "f:vfs_read", "fr:vfs_read"} {
		p, err := parseProbe(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
		} else if p.String() != s {
			t.Errorf("%s prints as %s", s, p)
		}
	}
	for _, s := range []string{"k:", "f:a:b", "x:vfs_read", "vfs_read", "profile:hz:0", "U:/w:p"} {
		if _, err := parseProbe(s); err == nil {
			t.Errorf("%s: parsed", s)
		}
	}
}
