package record

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/usage"
)

// TestDemo records the demo workload with every kind of user-space probe
// and checks counts, sums and log2 histograms against its ground truth.
func TestDemo(t *testing.T) { testDemo(t, false) }

// testDemo is TestDemo, with Options.NoCookies set to noCookies.
func testDemo(t *testing.T, noCookies bool) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildDemo(t)
	const iterations = 20000
	s, out := mustRecord(t, Options{
		NoCookies: noCookies,
		// A ring that holds every event: no loss even if the reader is
		// slowed down (-race, a loaded machine).
		RingSize: 32 << 20,
		Command:  []string{exe, fmt.Sprint(iterations)},
		Probes: []string{
			"u:" + exe + ":virtio_net_receive_rcu(arg2)",
			"ur:" + exe + ":virtio_net_receive_rcu",
			"ur:" + exe + ":virtio_net_flush_tx(retval:s32)",
			"u:" + exe + ":qemu_sendv_packet_async(arg2:s32)",
			"ur:" + exe + ":qemu_sendv_packet_async",
			"U:" + exe + ":qemu:virtio-net-rx-end",
			"U:" + exe + ":virtio-net-tx-get-len",
			"usdt:" + exe + ":usdt-examples:usdt1",
			"hello=U:" + exe + ":usdt2(arg0,str(arg1),arg2)",
		},
	})
	if s.ExitCode != 0 || s.Stopped != "command exited" {
		t.Fatalf("exit code %d, stopped %q", s.ExitCode, s.Stopped)
	}
	tr := parseTruth(t, out)
	c := readCapture(t, s.Output)
	if c.recovered || s.Lost != 0 || len(c.lost) != 0 {
		t.Fatalf("recovered %v, lost %d %v", c.recovered, s.Lost, c.lost)
	}
	checkAttachMode(t, c, noCookies)

	// Metadata.
	for _, want := range []struct{ probe, kind string }{
		{"virtio_net_receive_rcu", "uprobe"}, {"virtio_net_receive_rcu:return", "uretprobe"},
		{"virtio_net_flush_tx:return", "uretprobe"}, {"virtio-net-rx-end", "usdt"}, {"hello", "usdt"},
	} {
		p := c.probe(t, want.probe)
		if p.Kind != want.kind || p.Target != exe || p.BuildID == "" || !strings.Contains(p.Spec, exe) {
			t.Errorf("probe %s: %+v", want.probe, p)
		}
	}
	if c.meta.Extra["command"] != exe+" "+fmt.Sprint(iterations) || c.meta.Extra["pid"] != fmt.Sprint(s.TargetPID) ||
		c.meta.Host == "" || c.meta.Kernel == "" || c.meta.StartBoot == 0 || c.meta.Extra["ring_size"] != "33554432" {
		t.Errorf("meta: %+v", c.meta)
	}
	if id, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err != nil || c.meta.Extra[format.ExtraBootID] != strings.TrimSpace(string(id)) {
		t.Errorf("boot id %q, want the machine's (%q, %v)", c.meta.Extra[format.ExtraBootID], id, err)
	}
	for probe, fields := range map[string]map[string]format.Type{
		"virtio_net_receive_rcu":         {"arg2": format.Uint64},
		"virtio_net_receive_rcu:return":  {"retval": format.Int64},
		"virtio_net_flush_tx:return":     {"retval": format.Int32},
		"qemu_sendv_packet_async":        {"arg2": format.Int32},
		"qemu_sendv_packet_async:return": {"retval": format.Int64},
		"virtio-net-rx-end":              {"arg0": format.Uint64, "arg1": format.Uint64},
		"virtio-net-tx-get-len":          {"arg0": format.Int64},
		"usdt1":                          {"arg0": format.Int32},
		"hello":                          {"arg0": format.Int32, "arg1": format.String, "arg2": format.Int32},
	} {
		if n := len(c.probe(t, probe).Fields); n != len(fields) {
			t.Errorf("probe %s has %d fields, want %d", probe, n, len(fields))
		}
		for f, typ := range fields {
			if got := c.fieldType(t, probe, f); got != typ {
				t.Errorf("%s.%s is %v, want %v", probe, f, got, typ)
			}
		}
	}

	// Every event is the command's, in time order per thread.
	last := map[uint32]int64{}
	for name, rows := range c.rows {
		for _, r := range rows {
			if r.pid != uint32(s.TargetPID) || r.comm != "virtnet" {
				t.Fatalf("%s: event of pid %d comm %q, want %d virtnet", name, r.pid, r.comm, s.TargetPID)
			}
		}
	}
	for _, rows := range c.rows {
		for _, r := range rows {
			last[r.tid] = max(last[r.tid], r.time)
		}
	}

	// check compares one field's values with a ground-truth histogram.
	check := func(probe, field, truthName string) {
		t.Helper()
		rows := c.rows[probe]
		hist := map[uint64]uint64{}
		var sum uint64
		for _, r := range rows {
			v := uint64(r.ints[field])
			hist[log2Low(v)]++
			sum += v
		}
		if uint64(len(rows)) != tr.count[truthName] || sum != tr.sum[truthName] {
			t.Errorf("%s.%s: %d events summing to %d, want %d summing to %d (%s)",
				probe, field, len(rows), sum, tr.count[truthName], tr.sum[truthName], truthName)
		}
		if fmt.Sprint(hist) != fmt.Sprint(tr.hist[truthName]) {
			t.Errorf("%s.%s: log2 histogram %v, want %v", probe, field, hist, tr.hist[truthName])
		}
	}
	check("virtio_net_receive_rcu", "arg2", "rx_size")
	check("virtio_net_receive_rcu:return", "retval", "rx_size")
	check("virtio-net-rx-end", "arg1", "rx_size")
	check("virtio-net-rx-end", "arg0", "rx_bufs")
	check("virtio_net_flush_tx:return", "retval", "tx_packets")
	check("qemu_sendv_packet_async:return", "retval", "tx_len")
	check("virtio-net-tx-get-len", "arg0", "tx_len")
	for _, r := range c.rows["qemu_sendv_packet_async"] {
		if r.ints["arg2"] != 2 {
			t.Fatalf("qemu_sendv_packet_async iovcnt %d, want 2", r.ints["arg2"])
		}
	}
	if got := len(c.rows["qemu_sendv_packet_async"]); uint64(got) != tr.count["tx_len"] {
		t.Errorf("qemu_sendv_packet_async: %d events, want %d", got, tr.count["tx_len"])
	}

	u1 := c.rows["usdt1"]
	if uint64(len(u1)) != tr.count["usdt1"] {
		t.Fatalf("usdt1: %d events, want %d", len(u1), tr.count["usdt1"])
	}
	for i, r := range u1 {
		if r.ints["arg0"] != int64(100000*(i+1)) {
			t.Errorf("usdt1 %d: x = %d", i, r.ints["arg0"])
		}
	}
	h := c.rows["hello"]
	if len(h) != 1 || h[0].ints["arg0"] != 1000000 || h[0].strs["arg1"] != "Hello!" || h[0].ints["arg2"] != 5 {
		t.Errorf("usdt2: %+v", h)
	}
	if s.ReadFaults != 0 || s.Truncated != 0 || s.Malformed != 0 {
		t.Errorf("faults %d truncated %d malformed %d", s.ReadFaults, s.Truncated, s.Malformed)
	}
	var events uint64
	for _, rows := range c.rows {
		events += uint64(len(rows))
	}
	if events != s.Events {
		t.Errorf("capture has %d events, summary says %d", events, s.Events)
	}
}

// TestUSDTArgs records USDT arguments of every integer size and sign read
// from memory, registers and constants, a string, TYPE overrides, a probe
// guarded by a semaphore, and uprobe defaults and casts.
func TestUSDTArgs(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	const n = 50
	run := func(mode string, probes ...string) (*capture, [][]string) {
		s, out := mustRecord(t, Options{Command: []string{exe, mode, fmt.Sprint(n)}, Probes: probes})
		if s.ExitCode != 0 {
			t.Fatalf("exit %d", s.ExitCode)
		}
		return readCapture(t, s.Output), lines(out)
	}

	c, out := run("sizes",
		"U:"+exe+":test:sizes",
		"cast=U:"+exe+":sizes(arg6:s32,arg0:u8,arg7:s8)",
		"U:"+exe+":mixed(arg0,arg1,str(arg2),arg3)")
	types := []format.Type{format.Int8, format.Uint8, format.Int16, format.Uint16, format.Int32, format.Uint32, format.Int64, format.Uint64}
	for i, typ := range types {
		if got := c.fieldType(t, "sizes", fmt.Sprintf("arg%d", i)); got != typ {
			t.Errorf("sizes arg%d: %v, want %v", i, got, typ)
		}
	}
	var sizes, mixed [][]string
	for _, l := range out {
		switch l[0] {
		case "sizes":
			sizes = append(sizes, l)
		case "mixed":
			mixed = append(mixed, l)
		}
	}
	rows, casts, mx := c.rows["sizes"], c.rows["cast"], c.rows["mixed"]
	if len(sizes) != n || len(rows) != n || len(casts) != n || len(mixed) != n || len(mx) != n {
		t.Fatalf("%d/%d sizes, %d casts, %d/%d mixed", len(rows), len(sizes), len(casts), len(mx), len(mixed))
	}
	for i, l := range sizes {
		r := rows[i]
		for k := range 7 {
			if got, want := r.ints[fmt.Sprintf("arg%d", k)], testutil.Atoi(t, l[2+k]); got != want {
				t.Errorf("sizes %d arg%d = %d, want %d", i, k, got, want)
			}
		}
		if got, want := uint64(r.ints["arg7"]), atou(t, l[9]); got != want {
			t.Errorf("sizes %d arg7 = %d, want %d", i, got, want)
		}
		cr := casts[i]
		if got, want := cr.ints["arg6"], int64(int32(testutil.Atoi(t, l[8]))); got != want {
			t.Errorf("cast %d arg6:s32 = %d, want %d", i, got, want)
		}
		if got, want := cr.ints["arg0"], int64(uint8(testutil.Atoi(t, l[2]))); got != want {
			t.Errorf("cast %d arg0:u8 = %d, want %d", i, got, want)
		}
		if got, want := cr.ints["arg7"], int64(int8(atou(t, l[9]))); got != want {
			t.Errorf("cast %d arg7:s8 = %d, want %d", i, got, want)
		}
	}
	for i, l := range mixed {
		r := mx[i]
		name := ""
		if len(l) == 6 {
			name = l[4]
		}
		if r.ints["arg0"] != testutil.Atoi(t, l[2]) || r.ints["arg1"] != testutil.Atoi(t, l[3]) || r.strs["arg2"] != name || r.ints["arg3"] != 42 {
			t.Errorf("mixed %d: %+v, want %q", i, r, l)
		}
	}
	if got := c.fieldType(t, "mixed", "arg2"); got != format.String {
		t.Errorf("mixed arg2 is %v", got)
	}

	// The semaphore is set only while the probe is attached.
	plain, err := exec.Command(exe, "sem", "7").Output()
	if err != nil || strings.TrimSpace(string(plain)) != "sem 7 0" {
		t.Fatalf("sem without recorder: %q, %v", plain, err)
	}
	c, out = run("sem", "U:"+exe+":guarded")
	if len(out) != 1 || out[0][2] != fmt.Sprint(n) || len(c.rows["guarded"]) != n {
		t.Errorf("sem: workload says %q, %d events recorded", out, len(c.rows["guarded"]))
	}
	for i, r := range c.rows["guarded"] {
		if r.ints["arg0"] != int64(i) {
			t.Fatalf("guarded %d: %d", i, r.ints["arg0"])
		}
	}

	// Uprobe defaults (arg0..arg5 as u64) and casts of registers:
	// tick(i) for i = 1..300.
	s, _ := mustRecord(t, Options{Command: []string{exe, "burst", "300"},
		Probes: []string{"u:" + exe + ":tick", "s8=u:" + exe + ":tick(arg0:s8)", "u16=u:" + exe + ":tick(arg0:u16)"}})
	c = readCapture(t, s.Output)
	if p := c.probe(t, "tick"); len(p.Fields) != 6 || p.Fields[5].Name != "arg5" || p.Fields[5].Type != format.Uint64 {
		t.Errorf("default uprobe fields: %+v", p.Fields)
	}
	if c.fieldType(t, "s8", "arg0") != format.Int8 || c.fieldType(t, "u16", "arg0") != format.Uint16 {
		t.Errorf("cast fields: %+v %+v", c.probe(t, "s8").Fields, c.probe(t, "u16").Fields)
	}
	if len(c.rows["tick"]) != 300 || len(c.rows["s8"]) != 300 || len(c.rows["u16"]) != 300 {
		t.Fatalf("%d %d %d events", len(c.rows["tick"]), len(c.rows["s8"]), len(c.rows["u16"]))
	}
	for i := range 300 {
		v := int64(i + 1)
		if got := c.rows["tick"][i].ints["arg0"]; got != v {
			t.Errorf("tick %d: arg0 %d", i, got)
		}
		if got := c.rows["s8"][i].ints["arg0"]; got != int64(int8(v)) {
			t.Errorf("tick %d: arg0:s8 %d, want %d", i, got, int8(v))
		}
		if got := c.rows["u16"][i].ints["arg0"]; got != v {
			t.Errorf("tick %d: arg0:u16 %d", i, got)
		}
	}
}

// TestTracepoint records syscalls:sys_exit_write of a command that writes
// known lines while another process writes too: the pid filter keeps only
// the command's; plus a string field read through a pointer and a
// __data_loc string of a default field list. sched_process_exec's record
// ends at byte 20, the shortest, so it bounds the fields the program loads
// from the record directly (bpf.Uses.TPContextEnd): its pid, at 12, comes
// from the word at 8 shifted; openat's dfd, at 16, is read with
// bpf_probe_read_kernel. A bound past a record's end would fail to attach.
func TestTracepoint(t *testing.T) { testTracepoint(t, false) }

// testTracepoint is TestTracepoint, with Options.NoCookies set to noCookies.
func testTracepoint(t *testing.T, noCookies bool) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	noise := exec.Command("sh", "-c", "while :; do echo noise; done >/dev/null")
	if err := noise.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { noise.Process.Kill(); noise.Wait() }()

	const n = 300
	s, out := mustRecord(t, Options{
		NoCookies: noCookies,
		Command:   []string{exe, "writes", fmt.Sprint(n)},
		Probes: []string{
			"t:syscalls:sys_exit_write",
			"t:syscalls:sys_enter_openat(dfd:s32,str(filename))",
			"t:sched:sched_process_exec",
		},
	})
	c := readCapture(t, s.Output)
	checkAttachMode(t, c, noCookies)
	ws := c.rows["sys_exit_write"]
	ls := strings.SplitAfter(out, "\n")
	ls = ls[:len(ls)-1]
	if len(ls) != n || len(ws) != n {
		t.Fatalf("%d lines written, %d sys_exit_write events, want %d", len(ls), len(ws), n)
	}
	for i, w := range ws {
		if w.pid != uint32(s.TargetPID) || w.ints["ret"] != int64(len(ls[i])) {
			t.Fatalf("write %d: pid %d ret %d, want pid %d ret %d", i, w.pid, w.ints["ret"], s.TargetPID, len(ls[i]))
		}
	}
	if typ := c.fieldType(t, "sys_exit_write", "ret"); typ != format.Int64 {
		t.Errorf("ret is %v", typ)
	}
	found := false
	for _, r := range c.rows["sys_enter_openat"] {
		if r.pid != uint32(s.TargetPID) {
			t.Fatalf("openat of pid %d", r.pid)
		}
		if r.strs["filename"] == "/etc/ld.so.cache" && r.ints["dfd"] == -100 {
			found = true
		}
	}
	if !found {
		t.Errorf("no openat(AT_FDCWD, \"/etc/ld.so.cache\") in %+v", c.rows["sys_enter_openat"])
	}
	ex := c.rows["sched_process_exec"]
	if len(ex) != 1 || ex[0].strs["filename"] != exe || ex[0].ints["pid"] != int64(s.TargetPID) {
		t.Errorf("sched_process_exec: %+v (fields %+v)", ex, c.probe(t, "sched_process_exec").Fields)
	}
}

// TestAttachPID records a running process with -p while a second copy of
// the same binary runs untraced, and stops when the process exits.
func TestAttachPID(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildDemo(t)
	start := func() (*exec.Cmd, io.WriteCloser, *bytes.Buffer) { return startWaiting(t, exe, "3000") }
	traced, tin, tout := start()
	other, oin, _ := start()
	ready := filepath.Join(t.TempDir(), "ready")
	whenReady(ready, 0, func() {
		io.WriteString(tin, "go\n")
		io.WriteString(oin, "go\n")
	})
	s, _ := mustRecord(t, Options{PID: traced.Process.Pid, ReadyFile: ready, Probes: []string{
		"u:" + exe + ":virtio_net_receive_rcu(arg2)", "t:syscalls:sys_exit_write(ret)"}})
	traced.Wait()
	other.Wait()
	if s.Stopped != "process exited" || s.ExitCode != -1 {
		t.Errorf("stopped %q exit %d", s.Stopped, s.ExitCode)
	}
	b, err := os.ReadFile(ready)
	if err != nil || !strings.Contains(string(b), fmt.Sprintf("target=%d\n", traced.Process.Pid)) {
		t.Errorf("ready file %q %v", b, err)
	}
	tr := parseTruth(t, tout.String())
	c := readCapture(t, s.Output)
	rx := c.rows["virtio_net_receive_rcu"]
	var sum uint64
	for _, r := range rx {
		if r.pid != uint32(traced.Process.Pid) {
			t.Fatalf("event of pid %d (untraced copy is %d)", r.pid, other.Process.Pid)
		}
		sum += uint64(r.ints["arg2"])
	}
	if uint64(len(rx)) != tr.count["rx_size"] || sum != tr.sum["rx_size"] {
		t.Errorf("%d events summing to %d, want %d, %d", len(rx), sum, tr.count["rx_size"], tr.sum["rx_size"])
	}
	if len(c.rows["sys_exit_write"]) == 0 {
		t.Errorf("no sys_exit_write of the traced process")
	}
	if c.meta.Extra["pid"] != fmt.Sprint(traced.Process.Pid) || c.meta.Extra["comm"] != "virtnet" {
		t.Errorf("extra %v", c.meta.Extra)
	}
}

// TestLoss overflows a one-page ring: every generated event is either
// recorded or counted in a loss record.
func TestLoss(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	const n = 200000
	s, out := mustRecord(t, Options{Command: []string{exe, "burst", fmt.Sprint(n)}, RingSize: 4096,
		Probes: []string{"u:" + exe + ":tick(arg0)"}})
	c := readCapture(t, s.Output)
	got := uint64(len(c.rows["tick"]))
	lost := c.lost["tick"]
	t.Logf("ring 4096 bytes: %d recorded, %d lost in %d loss rows, %d generated (%s)", got, lost, c.lossRows, n, strings.TrimSpace(out))
	if got+lost != n {
		t.Errorf("recorded %d + lost %d != generated %d", got, lost, n)
	}
	if lost == 0 || got == 0 || c.lossRows == 0 {
		t.Errorf("want both recorded and lost events")
	}
	if s.Lost != lost || s.Events != got {
		t.Errorf("summary %d events %d lost, capture %d %d", s.Events, s.Lost, got, lost)
	}
	// Recorded calls keep their order: arg0 increases.
	var prev int64
	for _, r := range c.rows["tick"] {
		if r.ints["arg0"] <= prev {
			t.Fatalf("arg0 %d after %d", r.ints["arg0"], prev)
		}
		prev = r.ints["arg0"]
	}
}

// TestHighRate measures a tight loop of uprobe hits with the default ring.
func TestHighRate(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	if testing.Short() {
		t.Skip("skipping: -short")
	}
	exe := buildProbes(t)
	const n = 5000000
	s, out := mustRecord(t, Options{Command: []string{exe, "burst", fmt.Sprint(n)},
		Probes: []string{"u:" + exe + ":tick(arg0)"}})
	f := lines(out)
	loopNs := testutil.Atoi(t, f[0][2])
	t.Logf("%d calls in %.3fs traced (%.0f calls/s); recorded %d, lost %d; recorder %.3fs, %.0f events/s; file %d bytes (%.1fx)",
		n, float64(loopNs)/1e9, float64(n)/(float64(loopNs)/1e9), s.Events, s.Lost, s.Elapsed.Seconds(),
		float64(s.Events)/s.Elapsed.Seconds(), s.Bytes, float64(s.RawBytes)/float64(s.Bytes))
	if s.Events+s.Lost != n {
		t.Errorf("recorded %d + lost %d != %d", s.Events, s.Lost, n)
	}
}

// TestStop checks the ways a recording ends early: cancellation (SIGINT in
// the command) and -d; the command is stopped with SIGTERM and the file is
// complete.
func TestStop(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	out, ready := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready")
	whenReady(ready, time.Second, cancel)
	s, err := Record(ctx, Options{Output: out, Command: []string{exe, "spin", "60"}, Stdout: io.Discard, ReadyFile: ready,
		Probes: []string{"u:" + exe + ":tick(arg0)"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Stopped != "interrupted" || s.ExitCode != 128+15 || s.Events == 0 {
		t.Errorf("stopped %q exit %d events %d", s.Stopped, s.ExitCode, s.Events)
	}
	if c := readCapture(t, out); c.recovered || uint64(len(c.rows["tick"])) != s.Events {
		t.Errorf("recovered %v, %d events", c.recovered, len(c.rows["tick"]))
	}

	s, _ = mustRecord(t, Options{Duration: 700 * time.Millisecond, Command: []string{exe, "spin", "60"},
		Probes: []string{"u:" + exe + ":tick(arg0)"}})
	if s.Stopped != "duration" || s.ExitCode != 143 || s.Elapsed < 700*time.Millisecond || s.Elapsed > 5*time.Second {
		t.Errorf("stopped %q exit %d after %v", s.Stopped, s.ExitCode, s.Elapsed)
	}

	// System-wide with -d, and the exit status of a command that fails.
	s, _ = mustRecord(t, Options{Command: []string{exe, "exit", "7"}, Probes: []string{"t:syscalls:sys_exit_write"}})
	if s.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", s.ExitCode)
	}
	s, _ = mustRecord(t, Options{Duration: 300 * time.Millisecond, Probes: []string{"t:syscalls:sys_exit_write"}})
	if s.Stopped != "duration" || s.TargetPID != 0 {
		t.Errorf("system-wide: %+v", s)
	}
}

// TestNoLeaks checks that recordings, including failed ones, leave no file
// descriptors (links, maps, programs, rings) and no uprobe events behind.
func TestNoLeaks(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	probes := []string{"u:" + exe + ":tick", "ur:" + exe + ":tick", "U:" + exe + ":sizes", "t:syscalls:sys_exit_write"}
	mustRecord(t, Options{Command: []string{exe, "burst", "10"}, Probes: probes}) // warm up lazily opened fds
	before, events := openFDs(t), uprobeEvents(t)
	mustRecord(t, Options{Command: []string{exe, "burst", "10"}, Probes: probes})
	mustRecord(t, Options{Duration: 100 * time.Millisecond, Probes: probes})
	// One program per attachment, as without attach cookies.
	mustRecord(t, Options{Command: []string{exe, "burst", "10"}, Probes: probes, NoCookies: true})
	// Fails after attaching some probes: the last one cannot attach.
	for _, noCookies := range []bool{false, true} {
		_, err, _ := record(t, Options{Command: []string{exe, "burst", "10"},
			Probes: append(probes, "u:/proc/self/exe:nope"), NoCookies: noCookies})
		if err == nil {
			t.Errorf("recording with a bad probe succeeded (NoCookies %v)", noCookies)
		}
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d open fds before, %d after", before, after)
	}
	if after := uprobeEvents(t); after != events {
		t.Errorf("uprobe_events was %q, is %q", events, after)
	}
}

// TestErrors checks each error the recorder reports before recording.
func TestErrors(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildDemo(t)
	goExe := buildGo(t)
	tests := []struct {
		name   string
		opts   Options
		want   []string
		usage  bool
		warned string
	}{
		{name: "no probes", want: []string{"no probes"}, usage: true},
		{name: "bad spec", opts: Options{Probes: []string{"u:" + exe}}, want: []string{"want uprobe:BINARY:SYMBOL"}, usage: true},
		{name: "bad type", opts: Options{Probes: []string{"q:a:b"}}, want: []string{`unknown probe type "q"`}, usage: true},
		{name: "ring size", opts: Options{RingSize: 5000, Probes: []string{"t:syscalls:sys_exit_write"}}, want: []string{"power of two"}, usage: true},
		{name: "both -p and -c", opts: Options{PID: 1, Command: []string{"true"}, Probes: []string{"t:syscalls:sys_exit_write"}}, want: []string{"exclude"}, usage: true},
		{name: "missing binary", opts: Options{Probes: []string{"u:./no/such/binary:f"}}, want: []string{"no/such/binary"}},
		{name: "unknown program", opts: Options{Probes: []string{"u:no-such-program-xyz:f"}}, want: []string{"no-such-program-xyz"}},
		{name: "unknown symbol", opts: Options{Probes: []string{"u:" + exe + ":virtio_net_receive_rc"}},
			want: []string{`no function "virtio_net_receive_rc"`, `did you mean "virtio_net_receive_rcu"`}},
		{name: "unknown tracepoint", opts: Options{Probes: []string{"t:syscalls:sys_exit_writ"}},
			want: []string{"unknown tracepoint syscalls:sys_exit_writ", `"syscalls:sys_exit_write"`}},
		{name: "unknown category", opts: Options{Probes: []string{"t:syscall:sys_exit_write"}},
			want: []string{`unknown tracepoint category "syscall"`, `"syscalls"`}},
		{name: "unknown field", opts: Options{Probes: []string{"t:syscalls:sys_exit_write(rett)"}},
			want: []string{`no field "rett"`, `did you mean "ret"`}},
		{name: "unknown usdt", opts: Options{Probes: []string{"U:" + exe + ":virtio-net-rx-ends"}},
			want: []string{"no probe virtio-net-rx-ends", "qemu:virtio-net-rx-end"}},
		{name: "usdt arg", opts: Options{Probes: []string{"U:" + exe + ":usdt1(arg1)"}},
			want: []string{"usdt-examples:usdt1 has 1 argument: no arg1"}},
		{name: "usdt const string", opts: Options{Probes: []string{"U:" + exe + ":usdt2(str(arg2))"}},
			want: []string{"cannot be read as a string"}},
		{name: "kprobe", opts: Options{Probes: []string{"kprobe:vfs_read"}},
			want: []string{"this kernel has no kprobes", "CONFIG_KPROBES", "/sys/bus/event_source/devices/kprobe"}},
		{name: "kretprobe", opts: Options{Probes: []string{"kr:do_sys_openat2"}},
			want: []string{"no kprobes", "t:syscalls:"}},
		{name: "fentry", opts: Options{Probes: []string{"fentry:vfs_read"}}, want: []string{"fentry"}},
		{name: "fexit", opts: Options{Probes: []string{"fr:vfs_read"}}, want: []string{"fexit"}},
		{name: "kprobe pattern", opts: Options{Probes: []string{"k:vfs_*"}}, want: []string{"probe k:vfs_*: ", "this kernel has no kprobes"}},
		{name: "named pattern", opts: Options{Probes: []string{"n=k:vfs_*"}}, want: []string{"named after the functions it matches: leave out n="}, usage: true},
		{name: "fentry param", opts: Options{Probes: []string{"f:vfs_read(cnt)"}}, want: []string{"vfs_read has no parameter cnt", "count (size_t)"}},
		{name: "no process", opts: Options{PID: 1 << 30, Probes: []string{"t:syscalls:sys_exit_write"}}, want: []string{"no process 1073741824"}},
		{name: "no command", opts: Options{Command: []string{"no-such-command-xyz"}, Probes: []string{"t:syscalls:sys_exit_write"}},
			want: []string{"no-such-command-xyz", "not found"}},
		{name: "duplicate names", opts: Options{Probes: []string{"a=t:syscalls:sys_exit_write", "a=t:syscalls:sys_enter_write"}},
			want: []string{`both named "a"`}, usage: true},
		{name: "go uretprobe", opts: Options{Duration: 50 * time.Millisecond, Probes: []string{"ur:" + goExe + ":main.work"}},
			warned: "is a Go program: Go moves goroutine stacks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			tt.opts.Log = &log
			_, err, _ := record(t, tt.opts)
			if tt.warned != "" {
				if err != nil || !strings.Contains(log.String(), tt.warned) {
					t.Errorf("err %v, log %q, want warning %q", err, log.String(), tt.warned)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if usage.Is(err) != tt.usage {
				t.Errorf("usage.Is = %v for %q", usage.Is(err), err)
			}
			t.Log(err)
		})
	}
}

// TestOutputNotWritable checks that an unwritable output fails before the
// command runs or any probe is attached.
func TestOutputNotWritable(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, out := range []string{filepath.Join(dir, "no-dir", "c.arrow"), "/proc/version"} {
		s, err, _ := record(t, Options{Output: out, Command: []string{"sh", "-c", "touch " + marker},
			Probes: []string{"t:syscalls:sys_exit_write"}})
		if err == nil || s != nil || !strings.Contains(err.Error(), "output") {
			t.Errorf("output %s: summary %v, error %v", out, s, err)
		}
		t.Log(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}
