package resolve

import (
	"os"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/host"
	"github.com/cilium/ebpf/btf"
)

// TestKernelExpressions resolves kernel expressions with this kernel's
// BTF into the loads the program runs: t->task of do_nanosleep for fentry,
// and a kprobe's str(file->f_path.dentry->d_name.name) of vfs_read. (This
// host cannot attach either; the guests of vmtest record them.)
func TestKernelExpressions(t *testing.T) {
	if _, err := os.Stat(host.BTFDir + "/vmlinux"); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	spec, err := kernelTypes.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	// find looks for member in members, and in anonymous struct and union
	// members (struct dentry's d_name is in one on newer kernels).
	var find func(members []btf.Member, member string) (int32, bool)
	find = func(members []btf.Member, member string) (int32, bool) {
		for _, m := range members {
			if m.Name == member {
				return int32(m.Offset.Bytes()), true
			}
			if m.Name == "" {
				var inner []btf.Member
				switch u := btf.UnderlyingType(m.Type).(type) {
				case *btf.Struct:
					inner = u.Members
				case *btf.Union:
					inner = u.Members
				}
				if off, ok := find(inner, member); ok {
					return int32(m.Offset.Bytes()) + off, true
				}
			}
		}
		return 0, false
	}
	offset := func(typ, member string) int32 {
		t.Helper()
		var st *btf.Struct
		if err := spec.TypeByName(typ, &st); err != nil {
			t.Fatal(err)
		}
		off, ok := find(st.Members, member)
		if !ok {
			t.Fatalf("struct %s has no member %s", typ, member)
		}
		return off
	}
	kf, err := LookupKernelFunc("do_nanosleep")
	if err != nil {
		t.Fatal(err)
	}
	a, typ, err := funcExpr(&probespec.Field{Source: probespec.Param, Name: "t", Steps: []probespec.Step{{Op: probespec.StepArrow, Name: "task"}}}, kf)
	if err != nil {
		t.Fatal(err)
	}
	want := bpf.ArgSpec{Kind: bpf.KindFuncArg, Reg: 0, Size: 8, Leaf: bpf.LeafRead, LeafSize: 8, LeafOff: offset("hrtimer_sleeper", "task")}
	if a != want || typ != format.Uint64 {
		t.Errorf("t->task: %+v %v, want %+v u64", a, typ, want)
	}
	taskOff := a.LeafOff

	fn, src, err := kernelFuncTypes("vfs_read")
	if err != nil {
		t.Fatal(err)
	}
	f := probespec.Field{Source: probespec.Param, Name: "file", Str: true, Steps: []probespec.Step{
		{Op: probespec.StepArrow, Name: "f_path"}, {Op: probespec.StepMember, Name: "dentry"},
		{Op: probespec.StepArrow, Name: "d_name"}, {Op: probespec.StepMember, Name: "name"}}}
	a, typ, err = typedArg(&f, false, bpf.HostArch(), fn, src)
	if err != nil {
		t.Fatal(err)
	}
	want = bpf.ArgSpec{Kind: bpf.KindReg, Reg: bpf.HostArch().Args[0], Size: 8, Nread: 1, Leaf: bpf.LeafRead, LeafSize: 8, LeafFlags: bpf.LeafStr,
		LeafOff: offset("dentry", "d_name") + offset("qstr", "name")}
	want.ReadOff[0] = offset("file", "f_path") + offset("path", "dentry")
	if a != want || typ != format.String {
		t.Errorf("str(file->f_path.dentry->d_name.name): %+v %v, want %+v string", a, typ, want)
	}
	t.Logf("t->task: read 8 at +%d; file name: load at +%d, string pointer at +%d", taskOff, want.ReadOff[0], want.LeafOff)
}
