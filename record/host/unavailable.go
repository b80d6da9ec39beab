package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/suggest"
)

// kprobePMU is where the kernel exposes kprobes to perf_event_open.
const kprobePMU = "/sys/bus/event_source/devices/kprobe"

// HintFor suggests the candidates closest to a name that was not found
// ("" if none is close).
func HintFor(name string, candidates []string) string {
	return suggest.Hint(suggest.Closest(name, candidates, 5))
}

// KprobeUnavailable explains why a kprobe or kretprobe cannot be recorded on
// a kernel without kprobes. It names tracepoints close to the function,
// which often are the way to see the same thing.
func KprobeUnavailable(s *probespec.Spec, tracefsDir func() (string, error)) error {
	alt := "record a tracepoint (t:CATEGORY:EVENT) or a uprobe instead"
	if close := RelatedTracepointsOf(s.Symbol, tracefsDir); close != "" {
		alt += "; " + close
	}
	return fmt.Errorf("this kernel has no kprobes (built without CONFIG_KPROBES: no kprobe PMU at %s, no kprobe_events in tracefs): %s",
		kprobePMU, alt)
}

// KernelKprobes reports whether the kernel exposes kprobes to
// perf_event_open (the kprobe PMU) and to tracefs (kprobe_events): a kernel
// built without CONFIG_KPROBES has neither.
func KernelKprobes(tracefsDir func() (string, error)) (pmu, events bool) {
	_, err := os.Stat(kprobePMU)
	pmu = err == nil
	if dir, err := tracefsDir(); err == nil {
		events = FileExists(filepath.Join(dir, "kprobe_events"))
	}
	return pmu, events
}

// FuncAlternative names the probe that records kernel function s.Symbol
// (or close to it) when a fentry or fexit probe cannot: the kprobe on the
// same function where the kernel has kprobes, else tracepoints with close
// names.
func FuncAlternative(s *probespec.Spec, tracefsDir func() (string, error)) string {
	if KprobesPresent(tracefsDir) {
		if s.Kind == probespec.Fexit {
			return fmt.Sprintf("kr:%s records its return value from a register", s.Symbol)
		}
		args := "arg0..arg5"
		if a := bpf.HostArch(); a != nil {
			args = fmt.Sprintf("arg0..arg%d", len(a.Args)-1)
		}
		return fmt.Sprintf("k:%s records its arguments from registers (%s)", s.Symbol, args)
	}
	alt := "record a tracepoint or a uprobe instead"
	if close := RelatedTracepointsOf(s.Symbol, tracefsDir); close != "" {
		alt += " (" + close + ")"
	}
	return alt
}

// TracingUnavailable asks the kernel whether it loads a BPF tracing
// program (BPF_PROG_TYPE_TRACING) for s: nil if it does.
func TracingUnavailable(s *probespec.Spec) error {
	if err := features.HaveProgramType(ebpf.Tracing); err != nil {
		return fmt.Errorf("%s probes are not available: they need BPF tracing programs (BPF_PROG_TYPE_TRACING, attached through BPF trampolines), "+
			"which this kernel does not load (%v)%s", s.Kind, err, lockdownNote())
	}
	at := ebpf.AttachTraceFEntry
	if s.Kind == probespec.Fexit {
		at = ebpf.AttachTraceFExit
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "bpftape_probe", Type: ebpf.Tracing, AttachType: at, AttachTo: s.Symbol, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, btf.ErrNotFound) {
			return fmt.Errorf("cannot load a %s program for kernel function %s: %v", s.Kind, s.Symbol, err)
		}
		return fmt.Errorf("the kernel refused a %s program for %s: %v%s", s.Kind, s.Symbol, err, lockdownNote())
	}
	prog.Close()
	return nil
}

// TracingAttachUnavailable is TracingUnavailable for a probe to record:
// the kernel must also attach the program to a kernel function, which
// arm64 kernels before 6.4 cannot (they load tracing programs, and
// attaching says ENOTSUPP). On x86-64, which attaches wherever it loads,
// it checks no more than TracingUnavailable: a trial attach's detach waits
// for an RCU-tasks grace period.
func TracingAttachUnavailable(s *probespec.Spec) error {
	if err := TracingUnavailable(s); err != nil || bpf.HostArch() != bpf.ARM64 {
		return err
	}
	trampolineOnce.Do(func() { trampolineErr = attachTrampoline(s) })
	if trampolineErr != nil {
		return fmt.Errorf("%s probes are not available: this kernel loads BPF tracing programs but cannot attach them to a kernel function (%v; "+
			"arm64 attaches BPF trampolines through ftrace's direct calls, Linux 6.4)", s.Kind, trampolineErr)
	}
	return nil
}

var (
	trampolineOnce sync.Once
	trampolineErr  error
)

// attachTrampoline loads and attaches a fentry program that does nothing
// to s's function, and detaches it. Once per process, the answer being the
// kernel's: a pattern's hundred functions are not attached twice each.
func attachTrampoline(s *probespec.Spec) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "bpftape_probe", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: s.Symbol, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return nil // TracingUnavailable loaded it: the real load reports what changed
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return err
		}
		return nil // another reason (a busy function): the real attach reports it
	}
	return l.Close()
}

// lockdownNote reports kernel lockdown when securityfs shows it.
func lockdownNote() string {
	mode := lockdownMode()
	if mode == "" || mode == "none" {
		return ""
	}
	return fmt.Sprintf(" (kernel lockdown is %q)", mode)
}

// relatedTracepoints returns up to 4 tracepoints ("t:CATEGORY:EVENT") whose
// event names contain the kernel function's name without its syscall or
// helper prefixes (do_sys_openat2 → sys_enter_openat2, sys_exit_openat2),
// or else are close to it.
func relatedTracepoints(fn string, names, events []string) []string {
	base := fn
	for _, p := range []string{"__x64_sys_", "__ia32_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_", "do_sys_", "ksys_", "sys_", "__", "do_"} {
		if strings.HasPrefix(base, p) && len(base) > len(p)+2 {
			base = base[len(p):]
			break
		}
	}
	var out []string
	for i, ev := range events {
		if len(out) == 4 {
			break
		}
		if ev == base || strings.HasSuffix(ev, "_"+base) || strings.HasPrefix(ev, base+"_") {
			out = append(out, "t:"+names[i])
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, ev := range suggest.Closest(fn, events, 3) {
		for i := range events {
			if events[i] == ev {
				out = append(out, "t:"+names[i])
				break
			}
		}
	}
	return out
}

// KprobesPresent reports whether the kernel has kprobes at all.
func KprobesPresent(tracefsDir func() (string, error)) bool {
	pmu, events := KernelKprobes(tracefsDir)
	return pmu || events
}
