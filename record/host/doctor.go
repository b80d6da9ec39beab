package host

import (
	"fmt"
	"strings"

	"github.com/bpftape/bpftape/record/tracefs"
)

// Action is what bpftape does about a probe kind or a feature of the host.
type Action string

// Actions of a Decision.
const (
	Use      Action = "use"      // bpftape uses it
	Fallback Action = "fallback" // bpftape works without it, another way
	Refuse   Action = "refuse"   // bpftape refuses what needs it
	Note     Action = "note"     // worth knowing; changes nothing
)

// Decision is one line of a Diagnosis: what bpftape does about Subject
// (a probe kind or a key of HostFacts) and why.
type Decision struct {
	Subject string `json:"subject"`
	Action  Action `json:"action"`
	Reason  string `json:"reason"`
	// Blocks is set on a refusal that stops every recording.
	Blocks bool `json:"blocks,omitempty"`
}

// ProbeSupport says whether the kernel supports a probe kind and whether
// bpftape records it.
type ProbeSupport struct {
	Kind   string `json:"kind"`   // uprobe, uretprobe, usdt, usdt_semaphore, tracepoint, kprobe, ...
	Spec   string `json:"spec"`   // how a probe spec of that kind starts
	Kernel bool   `json:"kernel"` // the kernel supports it
	Action Action `json:"action"` // Use or Refuse
	Reason string `json:"reason"`
}

// Diagnosis is what Diagnose decides from a host's facts: whether bpftape
// can record there, per probe kind what it records, and per feature what
// it uses, works around or refuses.
type Diagnosis struct {
	CanRecord bool           `json:"can_record"`
	Reason    string         `json:"reason,omitempty"` // why it cannot, when it cannot
	Probes    []ProbeSupport `json:"probes"`
	Decisions []Decision     `json:"decisions"`
}

// Diagnose decides, from facts alone, what bpftape will use on a host and
// what it will refuse. It is pure: ExamineHost gathers the facts.
func Diagnose(f *HostFacts) *Diagnosis {
	d := &Diagnosis{}
	add := func(subject string, a Action, format string, args ...any) {
		d.Decisions = append(d.Decisions, Decision{Subject: subject, Action: a, Reason: fmt.Sprintf(format, args...)})
	}
	block := func(subject string, format string, args ...any) {
		add(subject, Refuse, format, args...)
		d.Decisions[len(d.Decisions)-1].Blocks = true
	}

	privErr := checkCaps(f.EUID, f.Caps)
	if privErr != nil {
		block("privileges", "%v", privErr)
	} else {
		add("privileges", Use, "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) are effective")
	}
	// need refuses to record without a feature the kernel lacks. A feature
	// the kernel did not answer about (EPERM) is not blamed on the kernel:
	// without privileges that is expected, and with them something else
	// (an LSM, a seccomp filter) stands in the way.
	need := func(subject string, ft HostFact, what, lacks string) {
		switch {
		case ft.Have:
		case !ft.Unknown:
			block(subject, "%s (%s)", lacks, ft.Detail)
		case privErr != nil:
			add(subject, Note, "%s not checked: without privileges the kernel does not say (%s)", what, ft.Detail)
		default:
			block(subject, "the kernel refused to load a program that checks for %s: %s", what, ft.Detail)
		}
	}
	switch f.Lockdown {
	case "confidentiality":
		block("lockdown", "kernel lockdown is confidentiality, which forbids BPF programs to read kernel memory, perf events and tracefs; boot with lockdown=integrity (or none)")
	case "integrity":
		add("lockdown", Note, "kernel lockdown is integrity: debugfs is locked down, so tracefs must be reached at %s", tracefs.TracingDir)
	}
	need("kprobe_programs", f.KprobePrograms, "BPF kprobe programs",
		"the kernel does not load BPF kprobe programs (BPF_PROG_TYPE_KPROBE, which uprobes use; Linux 4.1)")
	need("ringbuf", f.RingBuf, "the BPF ring buffer",
		"the kernel has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF and its helpers), which bpftape needs: it came in Linux 5.8")
	if f.RingBuf.Have {
		add("ringbuf", Use, "per-CPU BPF ring buffers carry the events")
	}
	need("boot_clock", f.BootClock, "bpf_ktime_get_boot_ns",
		"the kernel has no bpf_ktime_get_boot_ns, which stamps every event: it came in Linux 5.8")
	if f.BootClock.Have {
		add("boot_clock", Use, "events are stamped with bpf_ktime_get_boot_ns (CLOCK_BOOTTIME)")
	}
	need("helpers", f.Helpers, "the BPF helpers bpftape's programs call",
		"the kernel lacks BPF helpers bpftape's programs call (bpf_probe_read_user and _kernel came in Linux 5.5)")
	switch {
	case f.AttachCookies.Have:
		add("attach_cookies", Use, "one program serves every attachment; each attachment's cookie selects its spec")
	case f.AttachCookies.Unknown:
		add("attach_cookies", Note, "attach cookies not checked (%s)", f.AttachCookies.Detail)
	default:
		add("attach_cookies", Fallback, "no BPF attach cookies (Linux 5.15): one program instance per attachment, its spec a load-time constant)")
	}
	switch {
	case f.MmapBuildID.Have:
		add("mmap_build_id", Use, "the perf mmap records that keep the mappings of processes that exit or exec before the recorder reads them carry each file's build id")
	case f.MmapBuildID.Unknown:
		add("mmap_build_id", Note, "build ids in perf mmap records not checked (%s)", f.MmapBuildID.Detail)
	default:
		add("mmap_build_id", Fallback, "no build ids in perf mmap records (Linux 5.12): a file mapped by a process that exited is told by its device and inode")
	}
	if f.BTF.Have {
		add("btf", Use, "kernel BTF (%s) gives the offsets of task_struct's comm and tgid and of the thread pointer", f.BTF.Detail)
	} else {
		add("btf", Fallback, "no kernel BTF (%s): comm is read with bpf_get_current_comm", f.BTF.Detail)
		add("follow", Refuse, "without kernel BTF, following child processes (record -c) and thread-local USDT operands are refused: they need task_struct offsets")
	}
	switch {
	case f.TracefsDir != "":
		add("tracefs", Use, "tracefs is mounted on %s", f.TracefsDir)
	case f.Lockdown == "confidentiality":
		add("tracefs", Refuse, "tracefs is not mounted, and lockdown forbids it")
	default:
		add("tracefs", Fallback, "tracefs is not mounted with events/ on %s or %s: bpftape record mounts it on %s (needs root)",
			tracefs.TracingDir, tracefs.DebugTracingDir, tracefs.TracingDir)
	}
	if f.Debugfs == "" {
		add("debugfs", Note, "debugfs is not mounted; bpftape does not need it")
	} else {
		add("debugfs", Note, "debugfs is mounted on %s; bpftape does not need it", f.Debugfs)
	}
	memlock := memlockString(f.MemlockCur)
	if f.MemcgAccounting {
		add("memlock", Note, "BPF memory is charged to the memory cgroup (Linux 5.11+): RLIMIT_MEMLOCK (%s) does not limit it", memlock)
	} else if f.MemlockCur != MemlockUnlimited {
		if f.MemlockMax == MemlockUnlimited || f.Caps&(1<<capSysResource) != 0 {
			add("memlock", Use, "BPF memory counts against RLIMIT_MEMLOCK (%s) on kernels before 5.11: bpftape record raises it to unlimited",
				memlock)
		} else {
			block("memlock", "BPF memory counts against RLIMIT_MEMLOCK (%s, hard limit %s) on kernels before 5.11, and raising it needs CAP_SYS_RESOURCE",
				memlock, memlockString(f.MemlockMax))
		}
	}
	if f.PreemptRT {
		add("preempt_rt", Note, "PREEMPT_RT kernel: BPF programs can be preempted on their CPU")
	}
	if f.EUID != 0 {
		if v := f.UnprivilegedBPFDisabled; v != nil && *v != 0 {
			add("unprivileged_bpf_disabled", Note, "unprivileged_bpf_disabled=%d: only a process with CAP_BPF loads BPF programs", *v)
		}
		if v := f.PerfEventParanoid; v != nil && *v > 1 {
			add("perf_event_paranoid", Note, "perf_event_paranoid=%d: only a process with CAP_PERFMON opens the probes' perf events", *v)
		}
	}
	for _, m := range []struct {
		name string
		f    HostFact
	}{{"kprobe_multi", f.KprobeMulti}, {"uprobe_multi", f.UprobeMulti}} {
		have := "has"
		switch {
		case m.f.Unknown:
			have = "may have"
		case !m.f.Have:
			have = "lacks"
		}
		use := "bpftape does not use them (one link per attachment)"
		if m.name == "kprobe_multi" {
			use = "the kprobes of a pattern (k:vfs_*) share one when the kernel has them, else each has a link"
			if m.f.Have && f.AttachCookies.Have {
				add(m.name, Use, "this kernel has kprobe_multi links: the kprobes of a pattern (k:vfs_*) share one")
				continue
			}
		}
		add(m.name, Note, "this kernel %s %s links; %s", have, m.name, use)
	}

	d.Probes = probeSupport(f)
	var reasons []string
	for _, dec := range d.Decisions {
		if dec.Blocks {
			reasons = append(reasons, dec.Reason)
		}
	}
	d.CanRecord = len(reasons) == 0
	d.Reason = strings.Join(reasons, "; ")
	if !d.CanRecord {
		for i := range d.Probes {
			if d.Probes[i].Action == Use {
				d.Probes[i].Action = Refuse
				d.Probes[i].Reason = "bpftape cannot record on this host (" + d.Probes[i].Reason + ", but see the verdict)"
			}
		}
	}
	return d
}

// probeSupport decides, per probe kind, whether the kernel supports it and
// whether bpftape records it.
func probeSupport(f *HostFacts) []ProbeSupport {
	var out []ProbeSupport
	uprobes := f.UprobePMU || f.UprobeEvents
	uwhy := "no uprobe PMU and no uprobe_events in tracefs (a kernel built without CONFIG_UPROBE_EVENTS)"
	switch {
	case f.UprobePMU:
		uwhy = "through the uprobe PMU"
	case f.UprobeEvents:
		uwhy = "through tracefs uprobe_events (no uprobe PMU, before 4.17)"
	}
	for _, k := range []struct{ kind, spec string }{{"uprobe", "u:"}, {"uretprobe", "ur:"}, {"usdt", "U:"}} {
		out = append(out, decide(k.kind, k.spec, uprobes, uwhy))
	}
	sema := decide("usdt_semaphore", "U:", uprobes && f.RefCtr.Have, "USDT semaphores through the uprobe PMU's ref_ctr_offset")
	if uprobes && !f.RefCtr.Have {
		sema.Reason = "USDT probes with a semaphore need the uprobe PMU's ref_ctr_offset (Linux 4.20): " + f.RefCtr.Detail
	} else if !uprobes {
		sema.Reason = uwhy
	}
	out = append(out, sema)

	tp := ProbeSupport{Kind: "tracepoint", Spec: "t:", Kernel: f.TracepointProgs.Have, Action: Use}
	switch {
	case !f.TracepointProgs.Have:
		tp.Action, tp.Reason = Refuse, "the kernel does not load BPF tracepoint programs: "+f.TracepointProgs.Detail
	case f.TracefsDir != "":
		tp.Reason = "formats read from " + f.TracefsDir
	case f.Lockdown == "confidentiality":
		tp.Action, tp.Reason = Refuse, "tracefs is not mounted, and lockdown forbids it"
	default:
		tp.Reason = "tracefs is not mounted: bpftape record mounts it on " + tracefs.TracingDir
	}
	out = append(out, tp)

	kprobes := (f.KprobePMU || f.KprobeEvents) && f.KprobeAttach.Have
	kact, kwhy := Use, "through the kprobe PMU: register arguments and return values, str() of user or kernel memory"
	switch {
	case !f.KprobePMU && !f.KprobeEvents:
		kact, kwhy = Refuse, "this kernel has no kprobes (built without CONFIG_KPROBES: no kprobe PMU, no kprobe_events in tracefs)"
	case !f.KprobeAttach.Have:
		kact, kwhy = Refuse, fmt.Sprintf("this kernel refused a kprobe on %s: %s", DoctorFunc, f.KprobeAttach.Detail)
	}
	for _, k := range []struct{ kind, spec string }{{"kprobe", "k:"}, {"kretprobe", "kr:"}} {
		out = append(out, ProbeSupport{Kind: k.kind, Spec: k.spec, Kernel: kprobes, Action: kact, Reason: kwhy})
	}

	fentry := f.BTF.Have && f.Tracing.Have && f.FentryAttach.Have
	fact, fwhy := Use, "BPF tracing programs through BPF trampolines: parameters by their BTF names and types, read with bpf_get_func_arg"
	switch {
	case !f.BTF.Have:
		fact, fwhy = Refuse, "they need the kernel's BTF, and "+f.BTF.Detail
	case !f.Tracing.Have:
		fact, fwhy = Refuse, "the kernel does not load BPF tracing programs: "+f.Tracing.Detail
	case !f.FentryAttach.Have:
		fact, fwhy = Refuse, f.FentryAttach.Detail
	case !f.FuncArgs.Have:
		fact, fwhy = Refuse, "bpftape reads their arguments with bpf_get_func_arg (Linux 5.17), and this kernel refused it: "+f.FuncArgs.Detail
	}
	for _, k := range []struct{ kind, spec string }{{"fentry", "fentry:"}, {"fexit", "fexit:"}} {
		out = append(out, ProbeSupport{Kind: k.kind, Spec: k.spec, Kernel: fentry, Action: fact, Reason: fwhy})
	}
	return out
}

// decide is a probe kind bpftape records when the kernel supports it.
func decide(kind, spec string, kernel bool, why string) ProbeSupport {
	p := ProbeSupport{Kind: kind, Spec: spec, Kernel: kernel, Action: Use, Reason: why}
	if !kernel {
		p.Action = Refuse
	}
	return p
}

func memlockString(v uint64) string {
	if v == MemlockUnlimited {
		return "unlimited"
	}
	return fmt.Sprintf("%d KiB", v/1024)
}
