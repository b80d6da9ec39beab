package bpf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"
)

// ThreadBaseOffsets returns the byte offsets of thread.fsbase and
// thread.gsbase in the running kernel's struct task_struct, read from its
// BTF: the uprobe program adds the thread's %fs base to AddrFS operands
// (x86-64 thread-local storage) from there, since pt_regs does not hold it.
func ThreadBaseOffsets() (fs, gs uint32, err error) {
	t := kernelTask()
	if t.threadErr != nil {
		return 0, 0, fmt.Errorf("bpf: thread-local (%%fs) operands: %w", t.threadErr)
	}
	return t.fsbase, t.gsbase, nil
}

// taskOffsets are the offsets in the running kernel's struct task_struct
// that the programs read, or why each is unknown.
type taskOffsets struct {
	comm, tgid, fsbase, gsbase  uint32
	commErr, tgidErr, threadErr error
}

var (
	taskOnce sync.Once
	task     taskOffsets
)

// kernelTask reads every offset of taskOffsets from the kernel's BTF, once:
// parsing it and finding task_struct takes tens of milliseconds.
func kernelTask() *taskOffsets {
	taskOnce.Do(func() { task = readTaskOffsets(btf.LoadKernelSpec) })
	return &task
}

// ErrNoKernelBTF is wrapped by the errors of what needs the kernel's BTF
// when it has none (Features' FeatureKernelBTF): the place of the comm,
// the tgid and the thread's segment bases in struct task_struct.
var ErrNoKernelBTF = errors.New("no kernel BTF (" + kernelBTFPath + ": Linux 5.4 with CONFIG_DEBUG_INFO_BTF=y)")

// readTaskOffsets reads the offsets from the BTF that load returns.
func readTaskOffsets(load func() (*btf.Spec, error)) taskOffsets {
	var t taskOffsets
	fail := func(err error) taskOffsets {
		t.commErr, t.tgidErr, t.threadErr = err, err, err
		return t
	}
	spec, err := load()
	if err != nil {
		return fail(fmt.Errorf("bpf: %w: %w", ErrNoKernelBTF, err))
	}
	var ts *btf.Struct
	if err := spec.TypeByName("task_struct", &ts); err != nil {
		return fail(fmt.Errorf("bpf: kernel BTF: struct task_struct: %w", err))
	}
	t.comm, t.commErr = taskMemberOffset(ts, "comm", CommLen)
	t.tgid, t.tgidErr = taskMemberOffset(ts, "tgid", 4)
	t.fsbase, t.gsbase, t.threadErr = threadBaseOffsets(ts)
	return t
}

func threadBaseOffsets(task *btf.Struct) (uint32, uint32, error) {
	thread, toff, ok := findMember(task.Members, "thread", 0)
	if !ok {
		return 0, 0, errors.New("bpf: kernel BTF: struct task_struct has no member thread")
	}
	ts, ok := btf.UnderlyingType(thread.Type).(*btf.Struct)
	if !ok {
		return 0, 0, fmt.Errorf("bpf: kernel BTF: task_struct.thread is a %v, not a struct", thread.Type)
	}
	var offs [2]uint32
	for i, name := range []string{"fsbase", "gsbase"} {
		m, off, ok := findMember(ts.Members, name, 0)
		if !ok {
			return 0, 0, fmt.Errorf("bpf: kernel BTF: struct thread_struct has no member %s (not x86-64?)", name)
		}
		if sz, err := btf.Sizeof(m.Type); err != nil || sz != 8 {
			return 0, 0, fmt.Errorf("bpf: kernel BTF: thread_struct.%s is not 8 bytes", name)
		}
		offs[i] = (toff + off).Bytes()
	}
	return offs[0], offs[1], nil
}

// findMember finds member name in members, descending into anonymous
// structs and unions (a randomized task_struct wraps its fields in one);
// the offset returned is from the start of the outer struct.
func findMember(members []btf.Member, name string, base btf.Bits) (btf.Member, btf.Bits, bool) {
	for _, m := range members {
		if m.Name == name {
			return m, base + m.Offset, true
		}
		if m.Name != "" {
			continue
		}
		switch t := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			if f, off, ok := findMember(t.Members, name, base+m.Offset); ok {
				return f, off, true
			}
		case *btf.Union:
			if f, off, ok := findMember(t.Members, name, base+m.Offset); ok {
				return f, off, true
			}
		}
	}
	return btf.Member{}, 0, false
}

// TaskCommOffset returns the byte offset of comm in the running kernel's
// struct task_struct, from its BTF: the programs compare the 16 bytes there
// with the comm they last recorded, which is cheaper than
// bpf_get_current_comm's copy (which they use without BTF).
func TaskCommOffset() (uint32, error) {
	t := kernelTask()
	return t.comm, t.commErr
}

// TaskTgidOffset returns the byte offset of tgid in the running kernel's
// struct task_struct, from its BTF: following child processes reads a new
// task's tgid there.
func TaskTgidOffset() (uint32, error) {
	t := kernelTask()
	return t.tgid, t.tgidErr
}

// taskMemberOffset is the byte offset of the size-byte member name of
// struct task_struct (never 0: the first member is the thread_info or
// state, none that bpftape reads).
func taskMemberOffset(task *btf.Struct, name string, size uint32) (uint32, error) {
	m, off, ok := findMember(task.Members, name, 0)
	if !ok {
		return 0, fmt.Errorf("bpf: kernel BTF: struct task_struct has no member %s", name)
	}
	if sz, err := btf.Sizeof(m.Type); err != nil || uint32(sz) != size {
		return 0, fmt.Errorf("bpf: kernel BTF: task_struct.%s is not %d bytes", name, size)
	}
	if off.Bytes() == 0 {
		return 0, fmt.Errorf("bpf: kernel BTF: task_struct.%s at offset 0", name)
	}
	return off.Bytes(), nil
}
