package bpf

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
)

// A Feature is something of the kernel's that bpftape uses, with the first
// mainline Linux version that has it. Features lists them all: it is the
// one place that says which kernel has what. A Feature is the same on every
// host; Have asks the running kernel whether it has it.
type Feature struct {
	// Name says what it is, as errors name it: "BPF_MAP_TYPE_RINGBUF map".
	Name string
	// Since is the first mainline Linux version that has it: "5.8".
	Since string
	// Fallback is "" when bpftape cannot run without the feature (then
	// CheckFeatures requires it); otherwise it says what bpftape does
	// without it.
	Fallback string

	probe func() error
}

// Have reports whether the running kernel has f: nil if it has it, an error
// wrapping ebpf.ErrNotSupported if it lacks it, another error if the probe
// could not tell.
func (f Feature) Have() error { return f.probe() }

func (f Feature) String() string { return fmt.Sprintf("%s (Linux %s)", f.Name, f.Since) }

// probedTypes are the program types whose helpers bpftape's programs call:
// uprobes run Kprobe programs.
var probedTypes = []ebpf.ProgramType{ebpf.Kprobe, ebpf.TracePoint}

// haveHelper probes fn in every program type of probedTypes.
func haveHelper(fn asm.BuiltinFunc) func() error {
	return func() error { return haveHelperIn(fn, probedTypes...) }
}

func haveProgramType(pt ebpf.ProgramType) func() error {
	return func() error { return features.HaveProgramType(pt) }
}

func haveMapType(mt ebpf.MapType) func() error {
	return func() error { return features.HaveMapType(mt) }
}

// Feature names that other code refers to.
const (
	FeatureRunOnCPU     = "BPF_PROG_TEST_RUN of raw tracepoint programs on a given CPU"
	FeatureAttachCookie = "bpf_get_attach_cookie helper"
	FeatureKernelBTF    = "kernel BTF (" + kernelBTFPath + ")"
	FeatureMmapBuildID  = "build ids in perf mmap records (PERF_RECORD_MISC_MMAP_BUILD_ID)"
)

const kernelBTFPath = "/sys/kernel/btf/vmlinux"

var featureTable = []Feature{
	{Name: "BPF_PROG_TYPE_KPROBE programs (uprobes)", Since: "4.1", probe: haveProgramType(ebpf.Kprobe)},
	{Name: "BPF_PROG_TYPE_TRACEPOINT programs", Since: "4.7", probe: haveProgramType(ebpf.TracePoint)},
	{Name: "BPF_PROG_TYPE_RAW_TRACEPOINT programs", Since: "4.17", probe: haveProgramType(ebpf.RawTracepoint)},
	{Name: "BPF_MAP_TYPE_ARRAY map", Since: "3.19", probe: haveMapType(ebpf.Array)},
	{Name: "BPF_MAP_TYPE_HASH map", Since: "3.19", probe: haveMapType(ebpf.Hash)},
	{Name: "BPF_MAP_TYPE_PERCPU_ARRAY map", Since: "4.6", probe: haveMapType(ebpf.PerCPUArray)},
	{Name: "BPF_MAP_TYPE_ARRAY_OF_MAPS map", Since: "4.12", probe: haveMapType(ebpf.ArrayOfMaps)},
	{Name: "BPF_MAP_TYPE_RINGBUF map", Since: "5.8", probe: haveMapType(ebpf.RingBuf)},
	{Name: "ring buffers inside BPF_MAP_TYPE_ARRAY_OF_MAPS", Since: "5.8", probe: haveRingsInArrayOfMaps},
	{Name: "bpf_ringbuf_reserve helper", Since: "5.8", probe: haveHelper(asm.FnRingbufReserve)},
	{Name: "bpf_ringbuf_submit helper", Since: "5.8", probe: haveHelper(asm.FnRingbufSubmit)},
	// BPF_RB_AVAIL_DATA for the wake-up policy.
	{Name: "bpf_ringbuf_query helper", Since: "5.8", probe: haveHelper(asm.FnRingbufQuery)},
	{Name: "bpf_ktime_get_boot_ns helper", Since: "5.8", probe: haveHelper(asm.FnKtimeGetBootNs)},
	{Name: "bpf_probe_read_user helper", Since: "5.5", probe: haveHelper(asm.FnProbeReadUser)},
	{Name: "bpf_probe_read_user_str helper", Since: "5.5", probe: haveHelper(asm.FnProbeReadUserStr)},
	{Name: "bpf_probe_read_kernel helper", Since: "5.5", probe: haveHelper(asm.FnProbeReadKernel)},
	{Name: "bpf_probe_read_kernel_str helper", Since: "5.5", probe: haveHelper(asm.FnProbeReadKernelStr)},
	// The comm at its BTF offset and the %fs base of thread-local USDT operands.
	{Name: "bpf_get_current_task helper", Since: "4.8", probe: haveHelper(asm.FnGetCurrentTask)},
	{Name: FeatureAttachCookie, Since: "5.15", probe: haveHelper(asm.FnGetAttachCookie),
		Fallback: "one copy of the program per attachment, with its spec as load-time constants"},
	{Name: FeatureKernelBTF, Since: "5.4", probe: haveKernelBTF,
		Fallback: "comms are read with bpf_get_current_comm; --follow and %fs/%gs (thread-local) USDT operands are refused"},
	{Name: "uprobe ref_ctr_offset (USDT semaphores)", Since: "4.20", probe: haveRefCtrOffset,
		Fallback: "USDT probes guarded by a semaphore cannot be attached"},
	{Name: FeatureRunOnCPU, Since: "5.10", probe: haveRunOnCPU,
		Fallback: "no per-CPU staging: every sample is reserved in its ring on its own"},
	// Not BPF, but probed likewise: the stack table's side-band records.
	{Name: FeatureMmapBuildID, Since: "5.12", probe: haveMmapBuildID,
		Fallback: "the files mapped by a process that exited are told apart by device and inode"},
}

// Features returns the kernel features bpftape uses, with the Linux
// version that has each.
func Features() []Feature { return append([]Feature(nil), featureTable...) }

// FeatureError is CheckFeatures' error when the kernel lacks features that
// bpftape cannot run without. It wraps ebpf.ErrNotSupported.
type FeatureError struct {
	Missing []Feature
}

func (e *FeatureError) Error() string {
	names := make([]string, len(e.Missing))
	for i, f := range e.Missing {
		names[i] = f.String()
	}
	return "bpf: kernel lacks " + strings.Join(names, ", ")
}

func (e *FeatureError) Unwrap() error { return ebpf.ErrNotSupported }

// CheckFeatures reports whether the running kernel has every feature that
// bpftape cannot run without (those of Features without a Fallback). Its
// error is a *FeatureError naming each missing one with the Linux version
// that has it, joined with the errors of probes that could not tell.
func CheckFeatures() error {
	return checkFeatures(featureTable)
}

func checkFeatures(table []Feature) error {
	var missing []Feature
	var errs []error
	for _, f := range table {
		if f.Fallback != "" {
			continue
		}
		switch err := f.Have(); {
		case err == nil:
		case errors.Is(err, ebpf.ErrNotSupported):
			missing = append(missing, f)
		default:
			errs = append(errs, fmt.Errorf("bpf: probe %s: %w", f.Name, err))
		}
	}
	if len(missing) > 0 {
		errs = append([]error{&FeatureError{Missing: missing}}, errs...)
	}
	return errors.Join(errs...)
}

// HaveAttachCookies reports whether the kernel's uprobe and tracepoint
// programs can read their attachment's BPF cookie (Linux 5.15). The answer
// is probed once. Without cookies, Load falls back to one program per
// attachment (see Options.NoCookies).
func HaveAttachCookies() (bool, error) {
	cookiesOnce.Do(func() { haveCookies, cookiesErr = supported(haveHelper(asm.FnGetAttachCookie)()) })
	return haveCookies, cookiesErr
}

// HaveTaskBTF reports whether every program type bpftape loads can call
// bpf_get_current_task_btf (Linux 5.11) and load from its pointer: the
// comm is then read without a helper call. Probed once.
func HaveTaskBTF() (bool, error) {
	taskBTFOnce.Do(func() {
		taskBTF, taskBTFErr = supported(haveHelperIn(asm.FnGetCurrentTaskBtf, ebpf.Kprobe, ebpf.TracePoint, ebpf.PerfEvent))
	})
	return taskBTF, taskBTFErr
}

var (
	taskBTFOnce sync.Once
	taskBTF     bool
	taskBTFErr  error
)

// haveHelperIn probes fn in each of the program types.
func haveHelperIn(fn asm.BuiltinFunc, types ...ebpf.ProgramType) error {
	for _, pt := range types {
		if err := features.HaveProgramHelper(pt, fn); err != nil {
			return fmt.Errorf("%v in %v programs: %w", fn, pt, err)
		}
	}
	return nil
}

var (
	cookiesOnce sync.Once
	haveCookies bool
	cookiesErr  error
)

// supported turns a probe's error into whether the feature is there: an
// error wrapping ebpf.ErrNotSupported is a no, another is returned.
func supported(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ebpf.ErrNotSupported):
		return false, nil
	default:
		return false, err
	}
}

// useCookies decides whether the programs find their attachment's spec by
// cookie: unless noCookies forces the fallback or the kernel lacks cookies.
// A probe that cannot tell picks the fallback, which works on every kernel.
func useCookies(noCookies bool, have func() (bool, error)) bool {
	if noCookies {
		return false
	}
	ok, err := have()
	return ok && err == nil
}

// haveRingsInArrayOfMaps creates an array of maps holding a ring buffer,
// the way Load keeps one ring per CPU.
func haveRingsInArrayOfMaps() error {
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return err
	}
	inner := &ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())}
	ring, err := ebpf.NewMap(inner)
	if err != nil {
		return fmt.Errorf("create a ring buffer: %w", err)
	}
	defer ring.Close()
	outer, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: inner})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, syscall.EINVAL) || errors.Is(err, errENOTSUPP) {
			return fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
		}
		return fmt.Errorf("create an array of ring buffers: %w", err)
	}
	defer outer.Close()
	if err := outer.Put(uint32(0), ring); err != nil {
		return fmt.Errorf("put a ring buffer in an array of maps: %w", err)
	}
	return nil
}

// haveRunOnCPU reports whether a raw tracepoint program can be run on a
// chosen CPU from user space (BPF_F_TEST_RUN_ON_CPU), as the recorder
// flushes each CPU's stage. Probed once.
var haveRunOnCPU = sync.OnceValue(func() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.RawTracepoint,
		License: "MIT",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return err
		}
		return fmt.Errorf("load a raw tracepoint program: %w", err)
	}
	defer prog.Close()
	_, err = prog.Run(&ebpf.RunOptions{Flags: testRunOnCPU, CPU: 0})
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, syscall.EINVAL) || errors.Is(err, errENOTSUPP) {
		return fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
	}
	return err
})

// testRunOnCPU is BPF_F_TEST_RUN_ON_CPU (include/uapi/linux/bpf.h).
const testRunOnCPU = 1

// errENOTSUPP is the kernel's ENOTSUPP (524), which map creation returns
// for an inner map type that an array of maps cannot hold.
const errENOTSUPP = syscall.Errno(524)

// haveKernelBTF reports whether the kernel's BTF can be read, from
// /sys/kernel/btf/vmlinux or a vmlinux file (btf.LoadKernelSpec).
func haveKernelBTF() error {
	_, err := btf.LoadKernelSpec()
	return err
}

// haveRefCtrOffset reports whether the uprobe PMU takes a reference
// counter offset (the semaphore of a USDT probe).
func haveRefCtrOffset() error {
	const path = "/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset"
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no %s: %w", path, ebpf.ErrNotSupported)
		}
		return err
	}
	return nil
}

// HaveFuncArgs reports whether the kernel loads a fentry program that reads
// its function's arguments with bpf_get_func_arg (Linux 5.17), as the
// programs of FuncProgram do: nil if it does, an error wrapping
// ebpf.ErrNotSupported if the kernel lacks tracing programs or the helper,
// another error (EPERM under lockdown, say) if the load failed otherwise.
// The answer is probed once.
func HaveFuncArgs() error {
	funcArgsOnce.Do(func() { funcArgsErr = probeFuncArgs() })
	return funcArgsErr
}

var (
	funcArgsOnce sync.Once
	funcArgsErr  error
)

// funcArgsTarget is the function the probe program is loaded for: every
// kernel with BPF has it.
const funcArgsTarget = "vfs_read"

func probeFuncArgs() error {
	if err := features.HaveProgramType(ebpf.Tracing); err != nil {
		return err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "bpftape_fnarg", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: funcArgsTarget, License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R2, 0),
			asm.StoreMem(asm.RFP, -8, asm.R2, asm.DWord),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.FnGetFuncArg.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) || errors.Is(err, syscall.EINVAL) {
			// An unknown helper fails verification.
			return fmt.Errorf("bpf_get_func_arg in a fentry program: %w: %w", ebpf.ErrNotSupported, err)
		}
		return fmt.Errorf("load a fentry program for %s: %w", funcArgsTarget, err)
	}
	return prog.Close()
}

// HaveKprobeMulti reports whether the kernel has kprobe_multi links (5.18,
// CONFIG_FPROBE): one link attaches a program to many functions. Debian's
// 6.1 lacks them. The answer is probed once.
func HaveKprobeMulti() bool {
	kmultiOnce.Do(func() { haveKmulti = features.HaveBPFLinkKprobeMulti() == nil })
	return haveKmulti
}

var (
	kmultiOnce sync.Once
	haveKmulti bool
)
