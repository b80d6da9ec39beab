package host

import (
	"strings"
	"testing"
)

// capableHost is a host where bpftape records every kind it supports: a
// 6.12-like kernel with kprobes, fentry, cookies and BTF, run as root.
func capableHost() *HostFacts {
	yes := HostFact{Have: true}
	two := 2
	return &HostFacts{
		Release: "6.12.41+deb12-amd64", Version: "#1 SMP PREEMPT_DYNAMIC Debian 6.12.41-1~bpo12+1",
		EUID: 0, Caps: 1<<capSysAdmin | 1<<capBPF | 1<<capPerfmon | 1<<capSysResource,
		Lockdown: "none", UnprivilegedBPFDisabled: &two, PerfEventParanoid: &two,
		MemlockCur: 8 << 20, MemlockMax: 8 << 20, MemcgAccounting: true,
		TracefsDir: "/sys/kernel/tracing", Debugfs: "/sys/kernel/debug",
		UprobePMU: true, UprobeEvents: true, KprobePMU: true, KprobeEvents: true,
		KprobeAttach: yes, RefCtr: yes, BTF: HostFact{Have: true, Detail: "/sys/kernel/btf/vmlinux"},
		KprobePrograms: yes, TracepointProgs: yes, AttachCookies: yes, RingBuf: yes, BootClock: yes,
		Helpers: yes, KprobeMulti: yes, UprobeMulti: yes, Tracing: yes, FentryAttach: yes, FuncArgs: yes,
		MmapBuildID: yes,
	}
}

// TestDoctorDiagnose checks the decisions from facts to verdict, one
// change from a capable host at a time.
func TestDoctorDiagnose(t *testing.T) {
	no := func(detail string) HostFact { return HostFact{Detail: detail} }
	type want struct {
		subject string // a Decision's subject or a probe kind
		action  Action
		reason  string // a substring of its reason
	}
	for _, tc := range []struct {
		name      string
		change    func(*HostFacts)
		canRecord bool
		blockedBy string // a substring of Diagnosis.Reason when it cannot record
		want      []want
	}{
		{
			name: "capable", change: func(*HostFacts) {}, canRecord: true,
			want: []want{
				{"uprobe", Use, "uprobe PMU"}, {"uretprobe", Use, ""}, {"usdt", Use, ""},
				{"usdt_semaphore", Use, "ref_ctr_offset"}, {"tracepoint", Use, "/sys/kernel/tracing"},
				{"kprobe", Use, "kprobe PMU"},
				{"fentry", Use, "bpf_get_func_arg"},
				{"attach_cookies", Use, "cookie"}, {"ringbuf", Use, ""}, {"btf", Use, ""},
				{"privileges", Use, ""}, {"tracefs", Use, ""}, {"mmap_build_id", Use, "build id"},
			},
		},
		{
			name: "no build ids in mmap records (5.10) → fallback, device and inode", canRecord: true,
			change: func(f *HostFacts) { f.MmapBuildID = no("not supported") },
			want:   []want{{"mmap_build_id", Fallback, "device and inode"}, {"uprobe", Use, ""}},
		},
		{
			name: "no cookies → fallback, one program per attachment", canRecord: true,
			change: func(f *HostFacts) { f.AttachCookies = no("not supported (requires >= v5.15)") },
			want:   []want{{"attach_cookies", Fallback, "one program instance per attachment"}, {"uprobe", Use, ""}},
		},
		{
			name:   "no ring buffer → refuse, needs 5.8",
			change: func(f *HostFacts) { f.RingBuf = no("ring_buffer map not supported") },
			want:   []want{{"ringbuf", Refuse, "5.8"}, {"uprobe", Refuse, "cannot record"}},
			// the probe rows follow the verdict
			blockedBy: "ring buffer",
		},
		{
			name:      "no boot clock → refuse, needs 5.8",
			change:    func(f *HostFacts) { f.BootClock = no("helper not supported") },
			want:      []want{{"boot_clock", Refuse, "5.8"}},
			blockedBy: "bpf_ktime_get_boot_ns",
		},
		{
			name: "no kprobes → k: probes refused, the rest recorded", canRecord: true,
			change: func(f *HostFacts) {
				f.KprobePMU, f.KprobeEvents, f.KprobeAttach = false, false, no("not supported")
				f.KprobeMulti = no("not supported")
			},
			want: []want{
				{"kprobe", Refuse, "no kprobes"}, {"kretprobe", Refuse, "CONFIG_KPROBES"},
				{"uprobe", Use, ""}, {"tracepoint", Use, ""},
			},
		},
		{
			name: "kprobe perf events fail → k: probes refused", canRecord: true,
			change: func(f *HostFacts) { f.KprobeAttach = no("creating perf_kprobe PMU: operation not supported") },
			want:   []want{{"kprobe", Refuse, "refused a kprobe on vfs_read"}},
		},
		{
			name: "fentry loads fail with EPERM → fentry refused", canRecord: true,
			change: func(f *HostFacts) { f.Tracing = no("load program: operation not permitted") },
			want:   []want{{"fentry", Refuse, "operation not permitted"}, {"fexit", Refuse, "tracing programs"}},
		},
		{
			name:      "root, but the kernel refuses the checks (EPERM) → refuse, not blamed on the version",
			change:    func(f *HostFacts) { f.RingBuf = HostFact{Unknown: true, Detail: "operation not permitted"} },
			want:      []want{{"ringbuf", Refuse, "refused to load a program that checks for the BPF ring buffer"}},
			blockedBy: "operation not permitted",
		},
		{
			name: "not root: what the kernel would not say is a note, not a refusal",
			change: func(f *HostFacts) {
				f.EUID, f.Caps = 1000, 0
				eperm := HostFact{Unknown: true, Detail: "operation not permitted"}
				f.RingBuf, f.BootClock, f.KprobePrograms, f.AttachCookies = eperm, eperm, eperm, eperm
			},
			want: []want{
				{"privileges", Refuse, "needs root"}, {"ringbuf", Note, "not checked"},
				{"boot_clock", Note, "not checked"}, {"attach_cookies", Note, "not checked"},
			},
			blockedBy: "needs root",
		},
		{
			name:      "lockdown=confidentiality → refuse",
			change:    func(f *HostFacts) { f.Lockdown = "confidentiality" },
			want:      []want{{"lockdown", Refuse, "confidentiality"}},
			blockedBy: "lockdown",
		},
		{
			name: "lockdown=integrity → recorded, noted", canRecord: true,
			change: func(f *HostFacts) { f.Lockdown = "integrity" },
			want:   []want{{"lockdown", Note, "debugfs"}, {"uprobe", Use, ""}},
		},
		{
			name: "not root",
			change: func(f *HostFacts) {
				f.EUID, f.Caps = 1000, 0
			},
			want:      []want{{"privileges", Refuse, "uid 1000"}, {"unprivileged_bpf_disabled", Note, "CAP_BPF"}, {"perf_event_paranoid", Note, "CAP_PERFMON"}},
			blockedBy: "needs root",
		},
		{
			name:      "root with CAP_PERFMON dropped",
			change:    func(f *HostFacts) { f.Caps = 1 << capBPF },
			want:      []want{{"privileges", Refuse, "CAP_PERFMON"}},
			blockedBy: "without CAP_PERFMON",
		},
		{
			name: "CAP_BPF and CAP_PERFMON without CAP_SYS_ADMIN", canRecord: true,
			change: func(f *HostFacts) { f.Caps = 1<<capBPF | 1<<capPerfmon },
			want:   []want{{"privileges", Use, ""}},
		},
		{
			name: "no ref_ctr → USDT semaphores refused, plain USDT recorded", canRecord: true,
			change: func(f *HostFacts) { f.RefCtr = no("no .../ref_ctr_offset") },
			want:   []want{{"usdt_semaphore", Refuse, "4.20"}, {"usdt", Use, ""}},
		},
		{
			name: "no uprobes", canRecord: true,
			change: func(f *HostFacts) { f.UprobePMU, f.UprobeEvents = false, false },
			want:   []want{{"uprobe", Refuse, "CONFIG_UPROBE_EVENTS"}, {"usdt_semaphore", Refuse, "CONFIG_UPROBE_EVENTS"}, {"tracepoint", Use, ""}},
		},
		{
			name: "uprobes through tracefs only", canRecord: true,
			change: func(f *HostFacts) { f.UprobePMU = false },
			want:   []want{{"uprobe", Use, "uprobe_events"}},
		},
		{
			name: "no BTF → comm fallback, follow refused, fentry refused", canRecord: true,
			change: func(f *HostFacts) { f.BTF = no("/sys/kernel/btf/vmlinux does not exist") },
			want: []want{
				{"btf", Fallback, "bpf_get_current_comm"}, {"follow", Refuse, "record -c"},
				{"fentry", Refuse, "BTF"},
			},
		},
		{
			name: "tracefs unmounted → record mounts it", canRecord: true,
			change: func(f *HostFacts) { f.TracefsDir = "" },
			want:   []want{{"tracefs", Fallback, "mounts it on /sys/kernel/tracing"}, {"tracepoint", Use, "mounts it"}},
		},
		{
			name: "5.10: no cookies, memlock counted, no kprobe_multi", canRecord: true,
			change: func(f *HostFacts) {
				f.Release = "5.10.0-35-amd64"
				f.AttachCookies, f.KprobeMulti, f.UprobeMulti = no(""), no(""), no("")
				f.MemcgAccounting = false
			},
			want: []want{
				{"attach_cookies", Fallback, ""}, {"memlock", Use, "raises it to unlimited"},
				{"kprobe_multi", Note, "lacks"}, {"uprobe", Use, ""},
			},
		},
		{
			name: "5.10 without CAP_SYS_RESOURCE: memlock cannot be raised → refuse",
			change: func(f *HostFacts) {
				f.Release = "5.10.0-35-amd64"
				f.MemcgAccounting = false
				f.Caps &^= 1 << capSysResource
			},
			want:      []want{{"memlock", Refuse, "8192 KiB"}},
			blockedBy: "RLIMIT_MEMLOCK",
		},
		{
			name: "PREEMPT_RT noted", canRecord: true,
			change: func(f *HostFacts) { f.PreemptRT = true },
			want:   []want{{"preempt_rt", Note, "preempted"}},
		},
		{
			name:      "no kprobe programs → refuse",
			change:    func(f *HostFacts) { f.KprobePrograms = no("not supported") },
			want:      []want{{"kprobe_programs", Refuse, "BPF_PROG_TYPE_KPROBE"}},
			blockedBy: "kprobe programs",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := capableHost()
			tc.change(f)
			d := Diagnose(f)
			if d.CanRecord != tc.canRecord {
				t.Errorf("CanRecord = %v, want %v (reason %q)", d.CanRecord, tc.canRecord, d.Reason)
			}
			if tc.canRecord && d.Reason != "" {
				t.Errorf("can record, but reason %q", d.Reason)
			}
			if !tc.canRecord && !strings.Contains(d.Reason, tc.blockedBy) {
				t.Errorf("reason %q does not say %q", d.Reason, tc.blockedBy)
			}
			if f.RingBuf.Unknown && strings.Contains(d.Reason, "5.8") {
				t.Errorf("reason %q blames the kernel version for what the kernel did not say", d.Reason)
			}
			for _, w := range tc.want {
				action, reason, found := lookupDecision(d, w.subject)
				if !found {
					t.Errorf("no decision about %s in %+v", w.subject, d)
					continue
				}
				if action != w.action || !strings.Contains(reason, w.reason) {
					t.Errorf("%s: %s %q, want %s containing %q", w.subject, action, reason, w.action, w.reason)
				}
			}
			for _, dec := range d.Decisions {
				if dec.Blocks && dec.Action != Refuse {
					t.Errorf("%s blocks but is %s", dec.Subject, dec.Action)
				}
				if dec.Blocks && d.CanRecord {
					t.Errorf("%s blocks, yet CanRecord", dec.Subject)
				}
			}
			kinds := map[string]bool{}
			for _, p := range d.Probes {
				kinds[p.Kind] = true
				if p.Action == Use && !p.Kernel {
					t.Errorf("%s: used without kernel support", p.Kind)
				}
			}
			for _, k := range []string{"uprobe", "uretprobe", "usdt", "usdt_semaphore", "tracepoint", "kprobe", "kretprobe", "fentry", "fexit"} {
				if !kinds[k] {
					t.Errorf("no probe row for %s", k)
				}
			}
		})
	}
}

func lookupDecision(d *Diagnosis, subject string) (Action, string, bool) {
	for _, p := range d.Probes {
		if p.Kind == subject {
			return p.Action, p.Reason, true
		}
	}
	for _, dec := range d.Decisions {
		if dec.Subject == subject {
			return dec.Action, dec.Reason, true
		}
	}
	return "", "", false
}

func TestDoctorReleaseAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release      string
		major, minor int
		want         bool
	}{
		{"5.10.0-35-amd64", 5, 11, false},
		{"5.11.0", 5, 11, true},
		{"6.1.0-37-rt-amd64", 5, 11, true},
		{"4.19.0", 5, 11, false},
		{"5.15-rc1", 5, 15, true},
		{"garbage", 5, 11, false},
	} {
		if got := releaseAtLeast(tc.release, tc.major, tc.minor); got != tc.want {
			t.Errorf("releaseAtLeast(%q, %d, %d) = %v", tc.release, tc.major, tc.minor, got)
		}
	}
}

func TestDoctorMountinfoUnescape(t *testing.T) {
	if got := unescapeMountinfo(`/mnt/a\040b\\`); got != `/mnt/a b\\` {
		t.Errorf("unescape = %q", got)
	}
}
