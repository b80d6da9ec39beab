package record

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/record/resolve"
)

// TestProbeFilter records the demo with a filtered and an unfiltered probe on
// the same function in one run: the filtered one holds exactly the
// unfiltered events that pass its filter, in order, and the capture says
// how many it left out.
func TestProbeFilter(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildDemo(t)
	s, _ := mustRecord(t, Options{
		RingSize: 32 << 20,
		Command:  []string{exe, "5000"},
		Probes: []string{
			"all=u:" + exe + ":virtio_net_receive_rcu(arg2)",
			"big=u:" + exe + ":virtio_net_receive_rcu(arg2)/arg2 >= 1024 && comm == \"virtnet\"/",
			"mid=u:" + exe + ":virtio_net_receive_rcu(arg2:s32)/!(arg2 < 256 || arg2 > 4096)/",
			"none=u:" + exe + ":virtio_net_receive_rcu(arg2)/comm == \"nobody\"/",
		},
	})
	c := readCapture(t, s.Output)
	all := c.rows["all"]
	if len(all) != 5000 {
		t.Fatalf("all: %d events, want 5000", len(all))
	}
	for _, tc := range []struct {
		name   string
		filter string
		keep   func(v int64) bool
	}{
		{"big", `arg2 >= 1024 && comm == "virtnet"`, func(v int64) bool { return v >= 1024 }},
		{"mid", "!(arg2 < 256 || arg2 > 4096)", func(v int64) bool { return !(v < 256 || v > 4096) }},
		{"none", `comm == "nobody"`, func(int64) bool { return false }},
	} {
		var want []int64
		for _, r := range all {
			if tc.keep(r.ints["arg2"]) {
				want = append(want, r.ints["arg2"])
			}
		}
		got := c.rows[tc.name]
		p := c.probe(t, tc.name)
		t.Logf("%s: %d of %d events kept, %d filtered out", tc.name, len(got), len(all), p.Filtered)
		if len(got) != len(want) || int(p.Filtered) != len(all)-len(want) || p.Filter != tc.filter {
			t.Errorf("%s: %d events, %d filtered out, filter %q; want %d, %d, %q", tc.name, len(got), p.Filtered, p.Filter,
				len(want), len(all)-len(want), tc.filter)
			continue
		}
		for i := range got {
			if got[i].ints["arg2"] != want[i] {
				t.Fatalf("%s: event %d has arg2 %d, want %d", tc.name, i, got[i].ints["arg2"], want[i])
			}
		}
		for _, ps := range s.Probes {
			if ps.Name == tc.name && (ps.Filter != tc.filter || ps.Filtered != p.Filtered) {
				t.Errorf("%s: summary says %q, %d filtered out", tc.name, ps.Filter, ps.Filtered)
			}
		}
	}
	if p := c.probe(t, "all"); p.Filter != "" || p.Filtered != 0 {
		t.Errorf("all: filter %q, %d filtered", p.Filter, p.Filtered)
	}
	if n := len(c.rows["big"]); n == 0 || n == len(all) {
		t.Errorf("big kept %d of %d: the workload should have packets both sides of 1024", n, len(all))
	}
}

// TestProbeFilterComm records a tracepoint system-wide with --pid and
// --comm while two shells write: only the named one's events are kept,
// and the other's are counted as filtered out.
func TestProbeFilterComm(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	start := func(name string) int {
		// A link named name to bash: the comm is the name it was run as.
		// Its builtin echo writes from the shell itself.
		sh, err := exec.LookPath("bash")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(sh, dir+"/"+name); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(dir+"/"+name, "-c", "while :; do echo x; sleep 0.01; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	kept, other := start("keepme"), start("dropme")
	s, _ := mustRecord(t, Options{
		RingSize: 16 << 20,
		Duration: 2e9,
		PIDs:     []int{kept, other},
		Comms:    []string{"keepme"},
		Probes:   []string{"t:syscalls:sys_enter_write(count)"},
	})
	c := readCapture(t, s.Output)
	rows := c.rows["sys_enter_write"]
	p := c.probe(t, "sys_enter_write")
	want := fmt.Sprintf(`(pid == %d || pid == %d) && comm == "keepme"`, kept, other)
	if p.Filter != want {
		t.Errorf("filter %q, want %q", p.Filter, want)
	}
	t.Logf("%d writes kept, %d filtered out", len(rows), p.Filtered)
	if len(rows) < 10 || p.Filtered < 10 {
		t.Errorf("%d writes kept, %d filtered out: want 10 or more of each in 2 s", len(rows), p.Filtered)
	}
	for _, r := range rows {
		if r.pid != uint32(kept) || r.comm != "keepme" {
			t.Fatalf("event of pid %d comm %q kept", r.pid, r.comm)
		}
	}
}

// TestProbeFilterTracepoint filters a tracepoint on two fields of its
// record while a shell writes 2 and 3 bytes in turn: the filtered probe
// holds exactly the unfiltered probe's writes that pass.
func TestProbeFilterTracepoint(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := mustRecord(t, Options{
		RingSize: 16 << 20,
		Command:  []string{sh, "-c", "for i in $(seq 400); do echo x; echo yy; done >/dev/null"},
		Probes: []string{
			"all=t:syscalls:sys_enter_write(fd, count)",
			"two=t:syscalls:sys_enter_write(fd, count)/count == 2 && fd == 1/",
		},
	})
	c := readCapture(t, s.Output)
	all, two := c.rows["all"], c.rows["two"]
	var want int
	for _, r := range all {
		if r.ints["count"] == 2 && r.ints["fd"] == 1 {
			want++
		}
	}
	p := c.probe(t, "two")
	t.Logf("%d writes, %d kept, %d filtered out", len(all), len(two), p.Filtered)
	if want < 400 || len(two) != want || int(p.Filtered) != len(all)-want {
		t.Fatalf("%d writes of 2 bytes to fd 1 of %d; the filter kept %d and left out %d", want, len(all), len(two), p.Filtered)
	}
	for _, r := range two {
		if r.ints["count"] != 2 || r.ints["fd"] != 1 {
			t.Fatalf("kept a write of %d bytes to fd %d", r.ints["count"], r.ints["fd"])
		}
	}
}

// TestProbeFilterArgN: a uprobe that records its function's parameters by
// name (no field list, DWARF) takes argN in its filter for the N-th of
// them, as the analyses do: /arg2 > 4000/ keeps exactly what /size > 4000/
// keeps.
func TestProbeFilterArgN(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := testutil.BuildC(t, "../testdata/demo/virtnet.c", "virtnet", "-g") // DWARF: parameters by name
	s, _ := mustRecord(t, Options{
		RingSize: 16 << 20,
		Command:  []string{exe, "3000"},
		Probes: []string{
			"all=u:" + exe + ":virtio_net_receive_rcu",
			"byname=u:" + exe + ":virtio_net_receive_rcu/size > 4000/",
			"byarg=u:" + exe + ":virtio_net_receive_rcu/arg2 > 4000/",
		},
	})
	c := readCapture(t, s.Output)
	want := 0
	for _, r := range c.rows["all"] {
		if r.ints["size"] > 4000 {
			want++
		}
	}
	byname, byarg := c.rows["byname"], c.rows["byarg"]
	t.Logf("%d calls, %d of more than 4000 bytes; by name %d, by arg2 %d", len(c.rows["all"]), want, len(byname), len(byarg))
	if want == 0 || want == len(c.rows["all"]) || len(byname) != want || len(byarg) != want {
		t.Errorf("%d calls of more than 4000 bytes: /size > 4000/ kept %d, /arg2 > 4000/ %d", want, len(byname), len(byarg))
	}
	if f := c.probe(t, "byarg").Filter; f != "arg2 > 4000" {
		t.Errorf("filter %q", f)
	}
	_, err, _ := record(t, Options{Probes: []string{"u:" + exe + ":virtio_net_receive_rcu/arg3 > 3/"}, Duration: 1, Command: []string{"true"}})
	if want := `the probe records no field "arg3"; a filter compares recorded fields (nc, buf, size, arg0..arg2 for them)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("/arg3 > 3/ of three parameters: %v, want %q", err, want)
	}
}

// TestProbeFilterErrors checks that a filter naming what the probe does not
// record, or a constant its field cannot hold, is refused before anything
// is attached.
func TestProbeFilterErrors(t *testing.T) {
	t.Run("record", func(t *testing.T) {
		testutil.RequireBPF(t, bpf.CheckFeatures) // Record checks privileges first
		exe := buildDemo(t)
		for probe, want := range map[string]string{
			"u:" + exe + ":virtio_net_receive_rcu(arg2)/arg1 > 3/":                       `the probe records no field "arg1"`,
			"u:" + exe + ":virtio_net_receive_rcu(arg2:u8)/arg2 > 300/":                  "arg2 holds 0..255 (u8)",
			"u:" + exe + ":virtio_net_receive_rcu(arg2)/arg2 > -1/":                      "is unsigned",
			"u:" + exe + ":virtio_net_receive_rcu(str(arg2))/arg2 > 1/":                  "a filter compares integer fields with integers",
			"u:" + exe + ":virtio_net_receive_rcu(arg2)/pid < -1/":                       "pid holds 0..4294967295",
			"u:" + exe + ":virtio_net_receive_rcu(arg2)/pid > 0x100000000/":              "pid holds 0..4294967295",
			"u:" + exe + ":virtio_net_receive_rcu(arg2)/arg2 >= 0xffff888000000000/":     "",
			"u:" + exe + ":virtio_net_receive_rcu(arg2:s64)/arg2 >= 0xffff888000000000/": "arg2 holds",
			"t:sched:sched_process_exec(pid)/pid == 1/":                                  "write args.pid for the field",
			"t:sched:sched_process_exec(pid)/args.pid == 1 && pid > 0/":                  "write args.pid for the field",
			"t:sched:sched_process_exec(pid)/args.pid == 1/":                             "",
			"t:syscalls:sys_enter_write(count)/count > 1 && cpu != 9/":                   "",
		} {
			_, err, _ := record(t, Options{Probes: []string{probe}, Duration: 1, Command: []string{"true"}})
			if want == "" {
				if err != nil {
					t.Errorf("%s: %v", probe, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, resolve.ErrFilter) {
				t.Errorf("%s: error %v, want ErrFilter saying %q", probe, err, want)
			}
		}
	})
}
