package bpf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Staged samples (struct stage in bpftape.c): a CPU's samples are appended
// to a per-CPU stage and reach its ring in batches. A batch is one ring
// record, a sample header whose probe id is BatchProbeID followed by the
// samples, each a u32 length, a u32 0 and the sample padded to 8 bytes.
// Ring passes on the samples, never the batch.
const (
	BatchProbeID   = 0xfffd
	stagedHdrSize  = 8
	stagedLenLimit = 1 << 16 // no staged record is this long
)

// Staging reports whether the programs stage samples per CPU, so that
// FlushStages must run before the rings are read.
func (o *Objects) Staging() bool { return len(o.cpus) > 0 }

// FlushStages sends what each online CPU staged to its ring, by running
// flush_stage on every one (BPF_F_TEST_RUN_ON_CPU: an IPI to each other
// CPU). busy reports a CPU on which a recording program was running: its
// sample may reach the ring after the call. Without staging it does
// nothing. A Ring from NewRing calls it before a pass, every flushEvery at
// most unless a ring woke the reader (see Ring.consume).
func (o *Objects) FlushStages() (busy bool, err error) {
	for _, cpu := range o.cpus {
		ret, err := runOnCPU(o.flush, cpu)
		if errors.Is(err, unix.ENXIO) {
			continue // went offline: its stage stays until it comes back
		}
		if err != nil {
			return busy, fmt.Errorf("bpf: flush the stage of CPU %d: %w", cpu, err)
		}
		busy = busy || ret != 0
	}
	return busy, nil
}

// progRunAttr is the BPF_PROG_TEST_RUN part of union bpf_attr
// (include/uapi/linux/bpf.h), as far as runOnCPU uses it.
type progRunAttr struct {
	progFD, retval           uint32
	dataSizeIn, dataSizeOut  uint32
	dataIn, dataOut          uint64
	repeat, duration         uint32
	ctxSizeIn, ctxSizeOut    uint32
	ctxIn, ctxOut            uint64
	flags, cpu, batchSize, _ uint32
}

// runOnCPU runs prog, a raw tracepoint program, on cpu
// (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU) and returns its return
// value. It is Program.Run made as a raw system call, which keeps the
// runtime's sysmon thread asleep through a ring pass (see Ring.wait). The
// call is short, an IPI and a program of a few hundred instructions, so
// holding the P through it costs nothing.
func runOnCPU(prog *ebpf.Program, cpu int) (uint32, error) {
	attr := progRunAttr{progFD: uint32(prog.FD()), flags: testRunOnCPU, cpu: uint32(cpu)}
	for {
		_, _, errno := unix.RawSyscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		switch errno {
		case 0:
			return attr.retval, nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}

// NewRing is NewRing of the objects' rings, which flushes the CPUs' stages
// before each pass when the programs stage.
func (o *Objects) NewRing() (*Ring, error) {
	r, err := NewRing(o.RingMaps...)
	if err != nil {
		return nil, err
	}
	if o.Staging() {
		if err := r.setFlush(o.FlushStages); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// onlineCPUs lists the online CPUs (/sys/devices/system/cpu/online, as
// "0-3,5").
func onlineCPUs() ([]int, error) {
	const path = "/sys/devices/system/cpu/online"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bpf: online CPUs: %w", err)
	}
	cpus, err := parseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("bpf: online CPUs: %s: %w", path, err)
	}
	return cpus, nil
}

// parseCPUList parses a kernel CPU list ("0-3,5").
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first || last-first > 1<<16 {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
