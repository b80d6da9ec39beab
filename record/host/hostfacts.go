package host

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/tracefs"
)

// A HostFact is what ExamineHost found about one thing the running kernel
// may have: whether it has it, and where it was found or why it is missing.
// It is a finding about this host, where a [bpf.Feature] is a requirement
// of bpftape's, the same on every host: a name, the Linux version that has
// it and what bpftape does without it.
type HostFact struct {
	Have bool `json:"have"`
	// Unknown is set when the kernel did not say (an error other than
	// ebpf.ErrNotSupported, such as EPERM without privileges).
	Unknown bool   `json:"unknown,omitempty"`
	Detail  string `json:"detail,omitempty"` // where it was found, or why it is missing
}

// HostFacts is what ExamineHost finds about the running kernel and this
// process: everything Diagnose decides from. Its JSON keys are stable, for
// scripts (scripts/vmtest checks them in every guest).
type HostFacts struct {
	Release   string `json:"release"`    // uname -r
	Version   string `json:"version"`    // uname -v
	PreemptRT bool   `json:"preempt_rt"` // uname -v says PREEMPT_RT, or /sys/kernel/realtime is 1
	Machine   string `json:"machine"`    // uname -m: "x86_64", "aarch64"
	// Arch is the architecture this bpftape's programs are compiled for,
	// as GOARCH names it ("amd64", "arm64").
	Arch string `json:"arch"`

	EUID int    `json:"euid"`
	Caps uint64 `json:"effective_caps"` // the effective capability set

	// Lockdown is the kernel lockdown mode: "none", "integrity",
	// "confidentiality", or "" when securityfs does not show it.
	Lockdown string `json:"lockdown"`
	// UnprivilegedBPFDisabled and PerfEventParanoid are the sysctls, nil
	// when unreadable.
	UnprivilegedBPFDisabled *int `json:"unprivileged_bpf_disabled"`
	PerfEventParanoid       *int `json:"perf_event_paranoid"`
	// MemlockCur and MemlockMax are RLIMIT_MEMLOCK in bytes (MemlockUnlimited
	// for none); MemcgAccounting says BPF memory is charged to the memory
	// cgroup instead (5.11+), so the limit does not apply.
	MemlockCur      uint64 `json:"memlock_cur"`
	MemlockMax      uint64 `json:"memlock_max"`
	MemcgAccounting bool   `json:"memcg_accounting"`

	// TracefsDir is where tracefs is mounted with events/ ("" if nowhere);
	// Debugfs is where debugfs is mounted ("" if nowhere).
	TracefsDir string `json:"tracefs"`
	Debugfs    string `json:"debugfs"`

	UprobePMU    bool `json:"uprobe_pmu"`    // /sys/bus/event_source/devices/uprobe
	UprobeEvents bool `json:"uprobe_events"` // tracefs uprobe_events
	KprobePMU    bool `json:"kprobe_pmu"`
	KprobeEvents bool `json:"kprobe_events"`

	KprobeAttach    HostFact `json:"kprobe_attach"`    // a kprobe perf event on vfs_read, attached
	RefCtr          HostFact `json:"ref_ctr"`          // uprobe ref_ctr_offset (USDT semaphores), 4.20
	BTF             HostFact `json:"btf"`              // /sys/kernel/btf/vmlinux
	KprobePrograms  HostFact `json:"kprobe_programs"`  // BPF_PROG_TYPE_KPROBE (uprobes use it too)
	TracepointProgs HostFact `json:"tracepoint_progs"` // BPF_PROG_TYPE_TRACEPOINT
	AttachCookies   HostFact `json:"attach_cookies"`   // bpf_get_attach_cookie, 5.15
	RingBuf         HostFact `json:"ringbuf"`          // BPF_MAP_TYPE_RINGBUF and its helpers, 5.8
	BootClock       HostFact `json:"boot_clock"`       // bpf_ktime_get_boot_ns, 5.8
	Helpers         HostFact `json:"helpers"`          // the other helpers bpftape's programs call
	KprobeMulti     HostFact `json:"kprobe_multi"`
	UprobeMulti     HostFact `json:"uprobe_multi"`
	Tracing         HostFact `json:"tracing_progs"` // BPF_PROG_TYPE_TRACING
	FentryAttach    HostFact `json:"fentry_attach"` // a fentry program on vfs_read, loaded
	FuncArgs        HostFact `json:"func_args"`     // bpf_get_func_arg in a fentry program (5.17)
	MmapBuildID     HostFact `json:"mmap_build_id"` // build ids in perf mmap records (5.12)
}

// MemlockUnlimited is RLIMIT_MEMLOCK's "unlimited" in HostFacts.
const MemlockUnlimited = ^uint64(0)

// DoctorFunc is the kernel function the kprobe and fentry attempts attach
// to: in every kernel and in its BTF.
const DoctorFunc = "vfs_read"

// ExamineHost finds what the running kernel supports and what this process
// may do, by reading /proc and /sys and by asking the kernel (loading
// trivial programs, as cilium/ebpf's features package does). It changes
// nothing: it does not mount tracefs.
func ExamineHost() *HostFacts {
	f := &HostFacts{EUID: os.Geteuid(), Lockdown: lockdownMode()}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		f.Release = unix.ByteSliceToString(uts.Release[:])
		f.Version = unix.ByteSliceToString(uts.Version[:])
		f.Machine = unix.ByteSliceToString(uts.Machine[:])
	}
	if a := bpf.HostArch(); a != nil {
		f.Arch = a.Name
	}
	f.PreemptRT = strings.Contains(f.Version, "PREEMPT_RT")
	if b, err := os.ReadFile("/sys/kernel/realtime"); err == nil && strings.TrimSpace(string(b)) == "1" {
		f.PreemptRT = true
	}
	f.Caps, _ = effectiveCaps()
	f.UnprivilegedBPFDisabled = readIntFile("/proc/sys/kernel/unprivileged_bpf_disabled")
	f.PerfEventParanoid = readIntFile("/proc/sys/kernel/perf_event_paranoid")
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err == nil {
		f.MemlockCur, f.MemlockMax = rlim(rl.Cur), rlim(rl.Max)
	}
	f.MemcgAccounting = releaseAtLeast(f.Release, 5, 11)

	f.TracefsDir, _ = tracefs.Find()
	f.Debugfs = mountPoint("debugfs")
	tracefsDir := func() (string, error) {
		if f.TracefsDir == "" {
			return "", errors.New("tracefs is not mounted")
		}
		return f.TracefsDir, nil
	}
	_, err := os.Stat("/sys/bus/event_source/devices/uprobe")
	f.UprobePMU = err == nil
	if f.TracefsDir != "" {
		f.UprobeEvents = FileExists(filepath.Join(f.TracefsDir, "uprobe_events"))
	}
	f.KprobePMU, f.KprobeEvents = KernelKprobes(tracefsDir)
	f.RefCtr = hostFact(haveRefCtr())
	if FileExists(BTFDir + "/vmlinux") {
		f.BTF = HostFact{Have: true, Detail: BTFDir + "/vmlinux"}
	} else {
		f.BTF = HostFact{Detail: BTFDir + "/vmlinux does not exist (CONFIG_DEBUG_INFO_BTF off)"}
	}

	f.KprobePrograms = hostFact(features.HaveProgramType(ebpf.Kprobe))
	f.TracepointProgs = hostFact(features.HaveProgramType(ebpf.TracePoint))
	f.AttachCookies = hostFact(haveAttachCookies())
	f.RingBuf = hostFact(firstErr(features.HaveMapType(ebpf.RingBuf),
		features.HaveProgramHelper(ebpf.Kprobe, asm.FnRingbufReserve),
		features.HaveProgramHelper(ebpf.Kprobe, asm.FnRingbufQuery)))
	f.BootClock = hostFact(features.HaveProgramHelper(ebpf.Kprobe, asm.FnKtimeGetBootNs))
	var helperErrs []error
	for _, ft := range bpf.Features() {
		// The helpers bpftape cannot do without, but for those of the
		// ring buffer and the boot clock, which have rows of their own.
		if ft.Fallback == "" && strings.HasSuffix(ft.Name, " helper") &&
			!strings.HasPrefix(ft.Name, "bpf_ringbuf_") && !strings.HasPrefix(ft.Name, "bpf_ktime_") {
			if err := ft.Have(); err != nil {
				helperErrs = append(helperErrs, err)
			}
		}
	}
	f.Helpers = hostFact(firstErr(helperErrs...))
	f.KprobeMulti = hostFact(features.HaveBPFLinkKprobeMulti())
	f.UprobeMulti = hostFact(features.HaveBPFLinkUprobeMulti())
	f.KprobeAttach = hostFact(tryKprobe())
	f.MmapBuildID = hostFact(haveMmapBuildID())
	f.Tracing = hostFact(features.HaveProgramType(ebpf.Tracing))
	if f.Tracing.Have {
		f.FentryAttach = hostFact(tryFentry())
		f.FuncArgs = hostFact(bpf.HaveFuncArgs())
	} else {
		f.FentryAttach = HostFact{Detail: "no BPF tracing programs"}
		f.FuncArgs = HostFact{Detail: "no BPF tracing programs"}
	}
	return f
}

// haveAttachCookies reports whether BPF programs may call
// bpf_get_attach_cookie (5.15).
func haveAttachCookies() error {
	ok, err := bpf.HaveAttachCookies()
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s: %w", bpf.FeatureAttachCookie, ebpf.ErrNotSupported)
	}
	return nil
}

// haveMmapBuildID reports whether perf mmap records carry build ids
// (5.12), which the stack table's side-band asks for.
func haveMmapBuildID() error {
	ok, err := bpf.HaveMmapBuildID()
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s: %w", bpf.FeatureMmapBuildID, ebpf.ErrNotSupported)
	}
	return nil
}

// haveRefCtr reports whether the uprobe PMU takes a reference counter
// offset, which USDT semaphores need (4.20); cilium/ebpf refuses
// RefCtrOffset without it.
func haveRefCtr() error {
	const f = "/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset"
	if _, err := os.Stat(f); err != nil {
		return fmt.Errorf("no %s", f)
	}
	return nil
}

// tryKprobe attaches a kprobe on doctorFunc with a program that does
// nothing, and detaches it.
func tryKprobe() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "bpftape_doctor", Type: ebpf.Kprobe, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return fmt.Errorf("load a kprobe program: %w", err)
	}
	defer prog.Close()
	l, err := link.Kprobe(DoctorFunc, prog, nil)
	if err != nil {
		return err
	}
	return l.Close()
}

// tryFentry asks whether the kernel loads a fentry program for doctorFunc
// (tracingUnavailable, which record's errors use), then attaches one and
// detaches it: loading checks BTF, attaching needs a BPF trampoline.
func tryFentry() error {
	if err := TracingUnavailable(&probespec.Spec{Kind: probespec.Fentry, Symbol: DoctorFunc}); err != nil {
		return err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "bpftape_doctor", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: DoctorFunc, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return fmt.Errorf("load a fentry program for %s: %w", DoctorFunc, err)
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
	if err != nil {
		return fmt.Errorf("attach a fentry program to %s: %w", DoctorFunc, err)
	}
	return l.Close()
}

// hostFact turns a probe's result into a HostFact.
func hostFact(err error) HostFact {
	if err != nil {
		return HostFact{Unknown: !errors.Is(err, ebpf.ErrNotSupported), Detail: err.Error()}
	}
	return HostFact{Have: true}
}

// firstErr returns the first error of errs that is not nil: the first
// thing found missing.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// lockdownMode returns the selected mode of /sys/kernel/security/lockdown
// ("[none] integrity confidentiality" → "none"), "" if unreadable.
func lockdownMode() string {
	b, err := os.ReadFile("/sys/kernel/security/lockdown")
	if err != nil {
		return ""
	}
	mode := strings.TrimSpace(string(b))
	if i := strings.IndexByte(mode, '['); i >= 0 {
		if j := strings.IndexByte(mode[i:], ']'); j > 0 {
			mode = mode[i+1 : i+j]
		}
	}
	return mode
}

func readIntFile(path string) *int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	return &n
}

func rlim(v uint64) uint64 {
	if v == unix.RLIM_INFINITY {
		return MemlockUnlimited
	}
	return v
}

// mountPoint returns where a file system of type fstype is mounted first,
// from /proc/self/mountinfo; "" if nowhere.
func mountPoint(fstype string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(tail) > 0 && tail[0] == fstype {
			return unescapeMountinfo(fields[4])
		}
	}
	return ""
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// releaseAtLeast reports whether a kernel release ("5.10.0-28-amd64")
// is major.minor or later.
func releaseAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err := strconv.Atoi(parts[0])
	if err != nil {
		return false
	}
	mi := parts[1]
	if i := strings.IndexFunc(mi, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mi = mi[:i]
	}
	min, err := strconv.Atoi(mi)
	if err != nil {
		return false
	}
	return maj > major || maj == major && min >= minor
}

// BTFDir is where the kernel exposes its BTF and its modules'.
const BTFDir = "/sys/kernel/btf"

// FileExists reports whether path exists (and can be looked at).
func FileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
