package symbolize

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// table is a process 7 that exec'd at time 1000 (its second image maps
// another binary at the same address), a library, a stripped object and
// the kernel.
func table() *format.StackTable {
	return &format.StackTable{
		Objects: []format.Object{
			{ID: 1, Path: "/usr/bin/app", BuildID: "aa"},
			{ID: 2, Path: "/usr/lib/libc.so.6", BuildID: "bb"},
			{ID: 3, Path: "/usr/bin/newimage", BuildID: "cc"},
			{ID: 4, Path: "/opt/stripped", NoSymbols: "stripped, and no debug file"},
			{ID: 5, Path: "[kernel]", Kernel: true},
			{ID: 6, Path: "[ext4]", Kernel: true},
		},
		Maps: []format.Mapping{
			// PIE at 0x5550_0000_0000, text at file offset 0x1000, vaddr 0x1000.
			{PID: 7, Since: 10, Start: 0x555000001000, End: 0x555000002000, Offset: 0x1000, Object: 1, Bias: 0x555000000000},
			{PID: 7, Since: 10, Start: 0x7f0000028000, End: 0x7f00001a0000, Offset: 0x28000, Object: 2, Bias: 0x7f0000000000},
			{PID: 7, Since: 1000, Start: 0x555000001000, End: 0x555000002000, Offset: 0x1000, Object: 3, Bias: 0x555000000000},
			{PID: 7, Since: 10, Start: 0x600000, End: 0x601000, Offset: 0, Object: 4, Bias: 0},
			{PID: 8, Since: 10, Start: 0x400000, End: 0x401000, Object: 99},
		},
		Symbols: []format.Symbol{
			{Object: 1, Addr: 0x1100, Size: 0x20, Name: "leaf"},
			{Object: 1, Addr: 0x1120, Size: 0x40, Name: "mid"},
			{Object: 2, Addr: 0x29d10, Size: 0x30, Name: "__libc_start_call_main"},
			{Object: 3, Addr: 0x1100, Size: 0x20, Name: "new_leaf"},
			{Object: 5, Addr: 0xffffffff81000000, Size: 0x100, Name: "do_syscall_64"},
			{Object: 6, Addr: 0xffffffffc0000000, Size: 0, Name: "ext4_readdir"},
		},
		Stacks: []format.Stack{
			// leaf, then the return address just past mid's call, which
			// is the first byte after mid.
			{ID: 1, Frames: []uint64{0x555000001104, 0x555000001160}},
			{ID: 2, Kernel: true, Frames: []uint64{0xffffffff81000010, 0xffffffffc0000123, 0xffffffff82000000}},
		},
		Processes: []format.ProcessNote{{PID: 9, Reason: "exited before its mappings were read"}},
	}
}

func TestFrames(t *testing.T) {
	s := New(table())
	fs, ok := s.Frames(7, 500, 1)
	if !ok || len(fs) != 2 {
		t.Fatalf("stack 1: %v %+v", ok, fs)
	}
	if fs[0].Name != "leaf" || fs[0].Offset != 4 || !fs[0].Resolved || fs[0].Object != "/usr/bin/app" {
		t.Errorf("frame 0: %+v", fs[0])
	}
	// A return address one past its function's end is looked up a byte
	// earlier: mid, not whatever follows.
	if fs[1].Name != "mid" || fs[1].Offset != 0x40 || fs[1].Addr != 0x555000001160 {
		t.Errorf("frame 1: %+v", fs[1])
	}
	// After the exec (time 1000), the same address is in the new image.
	if fs, _ := s.Frames(7, 2000, 1); fs[0].Name != "new_leaf" {
		t.Errorf("after exec: %+v", fs[0])
	}
	// Before the first read of the mappings, the earliest covering one.
	if fs, _ := s.Frames(7, 1, 1); fs[0].Name != "leaf" {
		t.Errorf("before the first read: %+v", fs[0])
	}
	ks, ok := s.Frames(0, 0, 2)
	if !ok || ks[0].Name != "do_syscall_64" || ks[1].Name != "ext4_readdir" || ks[1].Object != "[ext4]" {
		t.Errorf("kernel stack: %+v", ks)
	}
	if ks[2].Resolved || ks[2].Name != "[0xffffffff82000000]" || ks[2].Reason == "" {
		t.Errorf("kernel frame outside every symbol: %+v", ks[2])
	}
	if _, ok := s.Frames(7, 0, 12345); ok {
		t.Error("an unknown stack id resolved")
	}
}

// TestUnresolved: every unresolved frame keeps what is known and says why.
func TestUnresolved(t *testing.T) {
	s := New(table())
	for _, tc := range []struct {
		pid            uint32
		addr           uint64
		name, object   string
		reasonContains string
	}{
		{7, 0x600010, "[stripped+0x10]", "/opt/stripped", "stripped, and no debug file"},
		{7, 0x555000001180, "[app+0x1180]", "/usr/bin/app", "no symbol of /usr/bin/app"},
		{7, 0x7ffd00000000, "[0x7ffd00000000]", "", "not a code address"},
		{9, 0x400000, "[0x400000]", "", "exited before its mappings were read"},
		{10, 0x400000, "[0x400000]", "", "no mappings of process 10"},
		{8, 0x400010, "[0x400010]", "", "object 99, which the capture lacks"},
	} {
		f := s.Frame(tc.pid, 100, tc.addr, false)
		if f.Resolved || f.Name != tc.name || f.Object != tc.object || !strings.Contains(f.Reason, tc.reasonContains) {
			t.Errorf("pid %d %#x: %+v, want %s in %q because %q", tc.pid, tc.addr, f, tc.name, tc.object, tc.reasonContains)
		}
	}
}

// TestHostileTable: contradictions and garbage give names, not panics.
func TestHostileTable(t *testing.T) {
	h := &format.StackTable{
		Objects: []format.Object{{ID: 1, Path: "a"}, {ID: 1, Path: "b"}},
		Maps:    []format.Mapping{{PID: 1, Start: 10, End: 5, Object: 1}, {PID: 1, Start: 0, End: ^uint64(0), Object: 1, Bias: 1 << 63}},
		Symbols: []format.Symbol{{Object: 1, Addr: ^uint64(0), Size: ^uint64(0), Name: "x"}, {Object: 7, Addr: 0, Name: "orphan"}},
		Stacks:  []format.Stack{{ID: 5, Frames: []uint64{0, 1, ^uint64(0)}}, {ID: 5, Frames: nil}},
	}
	s := New(h)
	fs, ok := s.Frames(1, 0, 5)
	if !ok || len(fs) != 3 {
		t.Fatalf("%v %+v", ok, fs)
	}
	_ = New(nil).Frame(1, 0, 0, true)
}
