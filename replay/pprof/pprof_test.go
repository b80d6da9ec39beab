package pprof

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/replaytest"
)

const boot = int64(10e9)

// The test capture's stacks, innermost first; every frame but the first is
// a return address.
var (
	userLeaf  = []uint64{0x404000, 0x401005}                     // main;leaf
	userLost  = []uint64{0x4ff000, 0x401005}                     // main;[x+0xff000]: no symbol covers it
	kernStack = []uint64{0xffffffff81000010, 0xffffffff81001005} // entry;do_sys
	idLeaf    = format.StackID(false, userLeaf)
	idLost    = format.StackID(false, userLost)
	idKern    = format.StackID(true, kernStack)
)

// writeCapture writes events of probe "leaf" with user and kernel stacks:
// thread 7 of comm a on main;leaf (3 events) and thread 8 of comm b on
// main;[x+0xff000] (2), both of pid 7, whose mapping of /bin/x starts at
// file offset 0x1000; and one event without a stack.
func writeCapture(t *testing.T) *replay.Capture {
	t.Helper()
	m := &format.Meta{Host: "h", StartBoot: boot, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "leaf", Kind: "uprobe", Spec: "u:/bin/x:leaf(ustack,kstack)", Fields: []format.Field{
			{Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}}}}}
	st := &format.StackTable{
		Stacks:  []format.Stack{{ID: idLeaf, Frames: userLeaf}, {ID: idLost, Frames: userLost}, {ID: idKern, Kernel: true, Frames: kernStack}},
		Objects: []format.Object{{ID: 1, Path: "/bin/x", BuildID: "abcd"}, {ID: 2, Path: "[kernel]", Kernel: true}},
		Maps:    []format.Mapping{{PID: 7, Since: boot, Start: 0x400000, End: 0x500000, Offset: 0x1000, Object: 1, Bias: 0}},
		Symbols: []format.Symbol{
			{Object: 1, Addr: 0x401000, Size: 0x100, Name: "main"}, {Object: 1, Addr: 0x404000, Size: 0x100, Name: "leaf"},
			{Object: 2, Addr: 0xffffffff81000000, Size: 0x100, Name: "do_sys"}, {Object: 2, Addr: 0xffffffff81001000, Size: 0x100, Name: "entry"},
		},
	}
	var rows []replaytest.Row
	add := func(tid uint32, comm string, user, kernel uint64) {
		rows = append(rows, replaytest.Row{Event: format.Event{Time: boot + int64(tid)*1000, PID: 7, TID: tid, Comm: []byte(comm),
			Ints: []uint64{user, kernel}, Strs: make([][]byte, 2)}})
	}
	for range 3 {
		add(7, "a", idLeaf, idKern)
	}
	add(8, "b", idLost, 0)
	add(8, "b", idLost, 0)
	add(9, "c", 0, 0)
	c, err := replay.Open(replaytest.Write(t, m, st, 2, rows...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stackOf returns the functions of s root first, "?" for a location
// without one, and its mappings' ids.
func stackOf(s *profile.Sample) string {
	var names []string
	for i := len(s.Location) - 1; i >= 0; i-- {
		l := s.Location[i]
		if len(l.Line) == 0 {
			names = append(names, "?")
			continue
		}
		names = append(names, l.Line[0].Function.Name)
	}
	return strings.Join(names, ";")
}

// TestBuild checks a profile of both stacks: one sample per stack and
// thread with its labels, kernel frames marked and above the user frames,
// the mapping of the user frames with its build id, start, limit and file
// offset, functions for resolved frames only, HasFunctions set only on a
// mapping whose frames all resolved; and that the encoded profile parses.
func TestBuild(t *testing.T) {
	c := writeCapture(t)
	p, sc, _, err := Build(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Events != 5 || sc.NoStack != 1 {
		t.Errorf("events %d, without stack %d: want 5 and 1", sc.Events, sc.NoStack)
	}
	got := map[string]string{}
	for _, s := range p.Sample {
		key := s.Label["comm"][0] + " " + stackOf(s)
		if s.Label["probe"][0] != "leaf" || s.NumLabel["pid"][0] != 7 {
			t.Errorf("%s: labels %v %v", key, s.Label, s.NumLabel)
		}
		got[key] = fmt.Sprintf("%d %d", s.Value[0], s.NumLabel["tid"][0])
	}
	want := map[string]string{
		"a main;leaf;entry_[k];do_sys_[k]": "3 7",
		"b main;?":                         "2 8",
	}
	if len(got) != len(want) {
		t.Errorf("samples %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("sample %q: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	var user, kernel *profile.Mapping
	for _, m := range p.Mapping {
		switch m.File {
		case "/bin/x":
			user = m
		case "[kernel]":
			kernel = m
		}
	}
	if user == nil || user.Start != 0x400000 || user.Limit != 0x500000 || user.Offset != 0x1000 || user.BuildID != "abcd" || user.HasFunctions {
		t.Errorf("user mapping %+v: want /bin/x 0x400000-0x500000 at 0x1000, build id abcd, not every frame resolved", user)
	}
	if kernel == nil || !kernel.HasFunctions {
		t.Errorf("kernel mapping %+v: want [kernel] with functions", kernel)
	}
	for _, l := range p.Location {
		if l.Mapping == user && len(l.Line) == 0 && l.Address != 0x4ff000 {
			t.Errorf("the unresolved location is at %#x, want 0x4ff000", l.Address)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.CheckValid(); err != nil || len(back.Sample) != 2 || back.SampleType[0].Type != "samples" {
		t.Errorf("parsed back: %v, %d samples, types %v", err, len(back.Sample), back.SampleType)
	}

	// By: the key at the root; user stacks only: no kernel frames.
	p, _, _, err = Build(c, Options{Stacks: replay.StacksOptions{By: "comm", Mode: replay.StacksUser}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		if st := stackOf(s); st != "a;main;leaf" && st != "b;main;?" {
			t.Errorf("--by comm --user: stack %s", st)
		}
	}
}

// TestBuildErrors checks the refusals: an unknown weight, a latency weight
// without a pair's return probe.
func TestBuildErrors(t *testing.T) {
	c := writeCapture(t)
	if _, _, _, err := Build(c, Options{Weight: "wall"}); err == nil {
		t.Errorf("weight wall: no error")
	}
	if _, _, _, err := Build(c, Options{Weight: Latency, Latency: replay.LatencyOptions{Entry: "leaf", Return: "nope"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("latency with a missing return probe: %v", err)
	}
	if _, _, _, err := Build(c, Options{Weight: OffCPU}); err == nil || !strings.Contains(err.Error(), "sched_switch") {
		t.Errorf("off-CPU of a probe without next_pid: %v", err)
	}
}

// TestBuildLatency weighs stacks by the calls of f, paired as latency
// pairs them: nested calls of one thread (the inner one ends first), a
// return with no entry and an entry that never returns, each call counted
// on the stack of its entry.
func TestBuildLatency(t *testing.T) {
	m := &format.Meta{Host: "h", StartBoot: boot, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "f", Kind: "uprobe", Spec: "u:/bin/x:f(ustack)", Fields: []format.Field{{Name: "ustack", Type: format.UserStack}}},
		{Name: "f:return", Kind: "uretprobe", Spec: "ur:/bin/x:f"}}}
	st := &format.StackTable{
		Stacks:  []format.Stack{{ID: idLeaf, Frames: userLeaf}, {ID: idLost, Frames: userLost}},
		Objects: []format.Object{{ID: 1, Path: "/bin/x"}},
		Maps:    []format.Mapping{{PID: 7, Since: boot, Start: 0x400000, End: 0x500000, Object: 1}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0x401000, Size: 0x100, Name: "main"}, {Object: 1, Addr: 0x404000, Size: 0x100, Name: "leaf"}},
	}
	var rows []replaytest.Row
	for _, e := range []struct {
		t     int64
		tid   uint32
		probe uint16
		stack uint64
	}{
		{0, 7, 0, idLeaf}, {10, 7, 0, idLost}, {15, 7, 1, 0}, {30, 7, 1, 0}, // main;leaf 30 ns around main;? 5 ns
		{40, 8, 1, 0},      // a return without entry
		{50, 8, 0, idLeaf}, // never returns
	} {
		ev := format.Event{Time: boot + e.t, PID: 7, TID: e.tid, Comm: []byte("x"), Probe: e.probe}
		if e.probe == 0 {
			ev.Ints, ev.Strs = []uint64{e.stack}, make([][]byte, 1)
		}
		rows = append(rows, replaytest.Row{Event: ev})
	}
	c, err := replay.Open(replaytest.Write(t, m, st, 2, rows...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, sc, _, err := Build(c, Options{Weight: Latency, Latency: replay.LatencyOptions{Entry: "f", Return: "f:return"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range p.Sample {
		got[stackOf(s)] = fmt.Sprint(s.Value)
	}
	if want := map[string]string{"main;leaf": "[1 30]", "main;?": "[1 5]"}; fmt.Sprint(got) != fmt.Sprint(want) || sc.Events != 2 {
		t.Errorf("latency samples %v (%d calls), want %v", got, sc.Events, want)
	}
	if p.SampleType[1].Type != "latency" || p.SampleType[1].Unit != "nanoseconds" || p.DefaultSampleType != "latency" {
		t.Errorf("sample types %v, default %q", p.SampleType, p.DefaultSampleType)
	}
}

// TestWriteSameBytes builds and writes the test capture's profile 20
// times: every time the same bytes. (Its stacks came in the order of a
// map's iteration, and its location ids with them.)
func TestWriteSameBytes(t *testing.T) {
	c := writeCapture(t)
	var first []byte
	for i := range 20 {
		p, _, _, err := Build(c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, p); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = buf.Bytes()
		} else if !bytes.Equal(buf.Bytes(), first) {
			t.Fatalf("write %d: %d bytes unlike the first write's %d", i+1, buf.Len(), len(first))
		}
	}
}
