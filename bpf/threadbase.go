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
	threadBaseOnce.Do(func() {
		threadBaseFS, threadBaseGS, threadBaseErr = threadBaseOffsets()
	})
	return threadBaseFS, threadBaseGS, threadBaseErr
}

var (
	threadBaseOnce             sync.Once
	threadBaseFS, threadBaseGS uint32
	threadBaseErr              error
)

func threadBaseOffsets() (uint32, uint32, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, 0, fmt.Errorf("bpf: thread-local (%%fs) operands need the kernel's BTF: %w", err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return 0, 0, fmt.Errorf("bpf: kernel BTF: struct task_struct: %w", err)
	}
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
// bpf_get_current_comm's copy.
func TaskCommOffset() (uint32, error) {
	taskCommOnce.Do(func() { taskCommOff, taskCommErr = taskCommOffset() })
	return taskCommOff, taskCommErr
}

var (
	taskCommOnce sync.Once
	taskCommOff  uint32
	taskCommErr  error
)

func taskCommOffset() (uint32, error) { return taskMemberOffset("comm", CommLen) }

// TaskTgidOffset returns the byte offset of tgid in the running kernel's
// struct task_struct, from its BTF: following child processes reads a new
// task's tgid there.
func TaskTgidOffset() (uint32, error) {
	taskTgidOnce.Do(func() { taskTgidOff, taskTgidErr = taskMemberOffset("tgid", 4) })
	return taskTgidOff, taskTgidErr
}

var (
	taskTgidOnce sync.Once
	taskTgidOff  uint32
	taskTgidErr  error
)

// taskMemberOffset is the byte offset of the size-byte member name of
// struct task_struct in the running kernel's BTF (never 0: the first
// member is the thread_info or state, none that bpftape reads).
func taskMemberOffset(name string, size uint32) (uint32, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, fmt.Errorf("bpf: kernel BTF: %w", err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return 0, fmt.Errorf("bpf: kernel BTF: struct task_struct: %w", err)
	}
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
