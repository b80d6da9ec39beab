package ctypes

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/bpf"
)

func kernelBTF(t *testing.T) *btf.Spec {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("no kernel BTF")
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// rawOffset finds member name of the BTF struct or union named by
// kind+tag in spec, seeing through anonymous members on its own (not with
// the package's lookup), and returns its byte offset and type.
func rawOffset(t *testing.T, spec *btf.Spec, typ btf.Type, name string) (int64, btf.Type) {
	t.Helper()
	var find func(typ btf.Type) (int64, btf.Type, bool)
	find = func(typ btf.Type) (int64, btf.Type, bool) {
		var ms []btf.Member
		switch u := btf.UnderlyingType(typ).(type) {
		case *btf.Struct:
			ms = u.Members
		case *btf.Union:
			ms = u.Members
		default:
			return 0, nil, false
		}
		for _, m := range ms {
			if m.Name == name {
				return int64(m.Offset / 8), m.Type, true
			}
		}
		for _, m := range ms {
			if m.Name == "" {
				if off, mt, ok := find(m.Type); ok {
					return int64(m.Offset/8) + off, mt, true
				}
			}
		}
		return 0, nil, false
	}
	off, mt, ok := find(typ)
	if !ok {
		t.Fatalf("BTF: no member %s in %v", name, typ)
	}
	return off, mt
}

func structNamed(t *testing.T, spec *btf.Spec, name string) *btf.Struct {
	t.Helper()
	var s *btf.Struct
	if err := spec.TypeByName(name, &s); err != nil {
		t.Fatalf("BTF struct %s: %v", name, err)
	}
	return s
}

func target(t *testing.T, typ btf.Type) btf.Type {
	t.Helper()
	p, ok := btf.UnderlyingType(typ).(*btf.Pointer)
	if !ok {
		t.Fatalf("%v is not a pointer", typ)
	}
	return p.Target
}

// TestBTFKernel resolves paths of the examples in the running
// kernel's BTF and compares offsets with the raw BTF members'.
func TestBTFKernel(t *testing.T) {
	spec := kernelBTF(t)
	k := NewBTF(spec)

	// f:do_nanosleep(t->task)
	hs := structNamed(t, spec, "hrtimer_sleeper")
	taskOff, _ := rawOffset(t, spec, hs, "task")
	host := bpf.HostArch()
	if host == nil {
		t.Skip("not an x86-64 or arm64 build")
	}
	// The first four integer argument registers, by ctypes' names.
	wantRegs := map[*bpf.Arch][]string{bpf.AMD64: {"di", "si", "dx", "cx"}, bpf.ARM64: {"x0", "x1", "x2", "x3"}}[host]
	fn, err := k.Func("do_nanosleep")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Arch != host || fn.Params[0].Type.String() != "struct hrtimer_sleeper *" || fn.Params[0].Loc != (Location{Arch: host, Reg: wantRegs[0]}) {
		t.Errorf("do_nanosleep: %s, t at %v (%v)", fn.Signature(), fn.Params[0].Loc, fn.Arch)
	}
	base, a, err := fn.ParamAccess(fn.Params[0].Name, []Step{Arrow("task")})
	if err != nil || base.Reg != wantRegs[0] || len(a.Reads) != 0 || a.Off != taskOff || a.Leaf != LeafRead || a.Size != 8 || a.Type.Kind != Pointer {
		t.Errorf("t->task: %v %v, %v; BTF says offset %d", base, a, err, taskOff)
	}
	if reg, off, ok := base.PtRegs(); !ok || reg != host.Args[0] || off != 0 {
		t.Errorf("PtRegs of %v: %d, %d, %v", base, reg, off, ok)
	}

	// k:vfs_read(file->f_path.dentry->d_name.name)
	fn, err = k.Func("vfs_read")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range fn.Params {
		if p.Err != nil || p.Loc.Reg != wantRegs[i] {
			t.Errorf("vfs_read %s: %v, %v", p.Name, p.Loc, p.Err)
		}
	}
	file := structNamed(t, spec, "file")
	fpath, pathT := rawOffset(t, spec, file, "f_path")
	dentryOff, dentryT := rawOffset(t, spec, pathT, "dentry")
	dname, qstrT := rawOffset(t, spec, target(t, dentryT), "d_name")
	nameOff, _ := rawOffset(t, spec, qstrT, "name")
	_, a, err = fn.ParamAccess("file", []Step{Arrow("f_path"), Dot("dentry"), Arrow("d_name"), Dot("name")})
	if err != nil || len(a.Reads) != 1 || a.Reads[0].Off != fpath+dentryOff || a.Off != dname+nameOff || !a.Type.IsCharPointer() {
		t.Errorf("file->f_path.dentry->d_name.name: %v, %v; BTF says read at %d, then %d", a, err, fpath+dentryOff, dname+nameOff)
	}

	// task_struct.comm: a char array, read as a string at its address.
	ts, err := k.LookupStruct("task_struct")
	if err != nil {
		t.Fatal(err)
	}
	commOff, _ := rawOffset(t, spec, structNamed(t, spec, "task_struct"), "comm")
	a, err = Resolve(PointerTo(ts), []Step{Arrow("comm")})
	if err != nil || a.Leaf != LeafAddr || a.Off != commOff || a.Size != 16 || !a.Type.IsCharArray() {
		t.Errorf("task->comm: %v, %v; BTF says offset %d", a, err, commOff)
	}
	// task->mm->... is a second load; a typo names close members.
	if _, err := Resolve(PointerTo(ts), []Step{Arrow("comn")}); !errors.Is(err, ErrNoMember) {
		t.Errorf("task->comn: %v", err)
	}

	// sk_buff keeps dev inside anonymous unions and structs.
	skb, err := k.LookupStruct("sk_buff")
	if err != nil {
		t.Fatal(err)
	}
	devOff, _ := rawOffset(t, spec, structNamed(t, spec, "sk_buff"), "dev")
	lenOff, _ := rawOffset(t, spec, structNamed(t, spec, "sk_buff"), "len")
	for name, want := range map[string]int64{"dev": devOff, "len": lenOff} {
		a, err := Resolve(PointerTo(skb), []Step{Arrow(name)})
		if err != nil || a.Off != want {
			t.Errorf("skb->%s: %v, %v; BTF says %d", name, a, err, want)
		}
	}

	// FromBTF on its own, and a cast through the kernel's types.
	if got := FromBTF(hs); got.Kind != Struct || got.Size != int64(hs.Size) || got.String() != "struct hrtimer_sleeper" {
		t.Errorf("FromBTF(hrtimer_sleeper): %s %v %d", got, got.Kind, got.Size)
	}
	if ct, err := ParseType("struct file *", k); err != nil || ct.Elem().Size != int64(file.Size) {
		t.Errorf("(struct file *): %v, %v", ct, err)
	}
	if _, err := k.Func("vfs_raed"); !errors.Is(err, ErrNoFunc) {
		t.Errorf("vfs_raed: %v", err)
	}
}
