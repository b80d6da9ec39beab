//go:build linux && (amd64 || arm64)

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/record/host"
)

func init() {
	register("doctor", doctorSummary, runDoctor)
}

const doctorHelp = `
Examines this host, changing nothing, and prints:

  the kernel release and whether it is PREEMPT_RT;
  the architecture, where its probes find a function's arguments and
  return value, and how user stacks are walked;
  per probe kind (uprobe, uretprobe, USDT, USDT with a semaphore,
  tracepoint, kprobe, kretprobe, fentry, fexit) whether the kernel supports
  it and whether bpftape records it, with the reason;
  the BPF features bpftape relies on or could (attach cookies, ring buffer,
  bpf_ktime_get_boot_ns, BTF, kprobes, kprobe_multi, uprobe_multi, fentry,
  uprobe ref_ctr_offset), found by asking the kernel as cilium/ebpf's
  features package does (it loads and attaches trivial programs);
  tracefs and debugfs, capabilities, kernel lockdown,
  unprivileged_bpf_disabled, perf_event_paranoid and RLIMIT_MEMLOCK;
  a verdict: what 'bpftape record' will use, work around, or refuse here.

Run it as the user that will record (root, or with CAP_BPF and
CAP_PERFMON): without them the kernel answers fewer questions.

--json prints one object with stable keys: can_record, reason, probes
(kind, spec, kernel, action, reason), decisions (subject, action, reason,
blocks) and facts (release, preempt_rt, machine, arch, attach_cookies.have, ringbuf.have,
btf.have, kprobe_pmu, tracefs, lockdown, memlock_cur, ...).

Examples:
  sudo bpftape doctor
  sudo bpftape doctor --json | jq '.probes[] | select(.action == "use") | .kind'
  sudo bpftape doctor --json | jq -e .can_record >/dev/null && echo ready

Exit status: 0 when bpftape can record on this host, 1 when it cannot (the
reason is printed, and is .reason in JSON), 2 on a usage error.
`

func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", "[--json]", doctorHelp, stdout)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parseNoArgs(fs, "doctor", args, stderr); !ok {
		return code
	}
	facts := host.ExamineHost()
	d := host.Diagnose(facts)
	w := bufio.NewWriter(stdout)
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doctorJSON{d, facts}); err != nil {
			return fail(stderr, "doctor", err)
		}
	} else {
		printDoctor(w, facts, d)
	}
	if err := w.Flush(); err != nil {
		return fail(stderr, "doctor", err)
	}
	if !d.CanRecord {
		fmt.Fprintf(stderr, "bpftape doctor: bpftape cannot record on this host: %s\n", textsafe.Escape(d.Reason))
		return exitFailure
	}
	return exitOK
}

// doctorJSON is doctor's --json object: the diagnosis's keys, and facts.
type doctorJSON struct {
	*host.Diagnosis
	Facts *host.HostFacts `json:"facts"`
}

func printDoctor(w io.Writer, f *host.HostFacts, d *host.Diagnosis) {
	rt := "not PREEMPT_RT"
	if f.PreemptRT {
		rt = "PREEMPT_RT"
	}
	fmt.Fprintf(w, "kernel %s (%s), %s\n", f.Release, f.Version, rt)
	if a := bpf.HostArch(); a != nil {
		fmt.Fprintf(w, "architecture %s (%s), %s\n", a.Name, f.Machine, a.Summary())
	}

	const probeRow = "  %-16s %-9s %-7s %-8s %s\n"
	fmt.Fprintf(w, "\nprobe kinds:\n")
	fmt.Fprintf(w, probeRow, "", "spec", "kernel", "bpftape", "why")
	for _, p := range d.Probes {
		fmt.Fprintf(w, probeRow, p.Kind, p.Spec, yesNo(p.Kernel), p.Action, oneLine(p.Reason))
	}

	fmt.Fprintf(w, "\nBPF features:\n")
	kprobes := host.HostFact{Have: (f.KprobePMU || f.KprobeEvents) && f.KprobeAttach.Have, Detail: f.KprobeAttach.Detail}
	if !f.KprobePMU && !f.KprobeEvents {
		kprobes.Detail = "no kprobe PMU, no kprobe_events in tracefs"
	}
	fentry := f.FentryAttach
	if !f.Tracing.Have {
		fentry.Detail = "no BPF tracing programs: " + f.Tracing.Detail
	}
	for _, x := range []struct {
		name, since string
		f           host.HostFact
	}{
		{"attach cookies", "5.15", f.AttachCookies},
		{"ring buffer", "5.8", f.RingBuf},
		{"bpf_ktime_get_boot_ns", "5.8", f.BootClock},
		{"other helpers", "5.5", f.Helpers},
		{"BTF", "", f.BTF},
		{"kprobes", "", kprobes},
		{"kprobe_multi", "5.18", f.KprobeMulti},
		{"uprobe_multi", "6.6", f.UprobeMulti},
		{"fentry/fexit", "5.5", fentry},
		{"uprobe ref_ctr", "4.20", f.RefCtr},
	} {
		since := ""
		if x.since != "" {
			since = "(" + x.since + ")"
		}
		fmt.Fprintf(w, "  %-22s %-6s %-3s %s\n", x.name, since, yesNo(x.f.Have), oneLine(x.f.Detail))
	}

	fmt.Fprintf(w, "\nhost:\n")
	tracefsDir, debugfs := f.TracefsDir, f.Debugfs
	if tracefsDir == "" {
		tracefsDir = "not mounted"
	}
	if debugfs == "" {
		debugfs = "not mounted"
	}
	lockdown := f.Lockdown
	if lockdown == "" {
		lockdown = "unknown (no /sys/kernel/security/lockdown)"
	}
	fmt.Fprintf(w, "  %-26s %s\n", "tracefs", tracefsDir)
	fmt.Fprintf(w, "  %-26s %s\n", "debugfs", debugfs)
	fmt.Fprintf(w, "  %-26s euid %d, effective %#x\n", "capabilities", f.EUID, f.Caps)
	fmt.Fprintf(w, "  %-26s %s\n", "lockdown", lockdown)
	fmt.Fprintf(w, "  %-26s %s\n", "unprivileged_bpf_disabled", intOr(f.UnprivilegedBPFDisabled))
	fmt.Fprintf(w, "  %-26s %s\n", "perf_event_paranoid", intOr(f.PerfEventParanoid))
	acct := "counted against RLIMIT_MEMLOCK"
	if f.MemcgAccounting {
		acct = "charged to the memory cgroup"
	}
	fmt.Fprintf(w, "  %-26s %s (hard %s); BPF memory is %s\n", "RLIMIT_MEMLOCK", bytesOr(f.MemlockCur), bytesOr(f.MemlockMax), acct)

	if d.CanRecord {
		fmt.Fprintf(w, "\nverdict: bpftape can record here\n")
	} else {
		fmt.Fprintf(w, "\nverdict: bpftape cannot record here\n")
	}
	for _, a := range []host.Action{host.Refuse, host.Fallback, host.Use, host.Note} {
		var kinds []string
		for _, p := range d.Probes {
			if p.Action == a {
				kinds = append(kinds, p.Kind)
			}
		}
		if len(kinds) > 0 {
			fmt.Fprintf(w, "  %-8s %-16s %s (see the probe kinds above)\n", a, "probes", strings.Join(kinds, ", "))
		}
		for _, dec := range d.Decisions {
			if dec.Action == a {
				fmt.Fprintf(w, "  %-8s %-16s %s\n", dec.Action, dec.Subject, oneLine(dec.Reason))
			}
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func intOr(p *int) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

func bytesOr(v uint64) string {
	if v == host.MemlockUnlimited {
		return "unlimited"
	}
	return fmt.Sprintf("%d KiB", v/1024)
}

// oneLine keeps a kernel's multi-line message (a verifier log) on its line.
func oneLine(s string) string {
	return textsafe.Escape(strings.Join(strings.Fields(s), " "))
}
