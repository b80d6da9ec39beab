//go:build linux && amd64

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// doctorOut is the part of doctor's --json that the tests check, read by
// its documented keys.
type doctorOut struct {
	CanRecord bool   `json:"can_record"`
	Reason    string `json:"reason"`
	Probes    []struct {
		Kind, Spec, Action, Reason string
		Kernel                     bool
	} `json:"probes"`
	Decisions []struct {
		Subject, Action, Reason string
		Blocks                  bool
	} `json:"decisions"`
	Facts struct {
		Machine       string `json:"machine"`
		Arch          string `json:"arch"`
		Release       string `json:"release"`
		PreemptRT     bool   `json:"preempt_rt"`
		EUID          int    `json:"euid"`
		Tracefs       string `json:"tracefs"`
		KprobePMU     bool   `json:"kprobe_pmu"`
		KprobeEvents  bool   `json:"kprobe_events"`
		UprobePMU     bool   `json:"uprobe_pmu"`
		BTF           have   `json:"btf"`
		AttachCookies have   `json:"attach_cookies"`
		RingBuf       have   `json:"ringbuf"`
		BootClock     have   `json:"boot_clock"`
		KprobeMulti   have   `json:"kprobe_multi"`
		UprobeMulti   have   `json:"uprobe_multi"`
		Tracing       have   `json:"tracing_progs"`
		FentryAttach  have   `json:"fentry_attach"`
		FuncArgs      have   `json:"func_args"`
		RefCtr        have   `json:"ref_ctr"`
	} `json:"facts"`
}

type have struct {
	Have bool `json:"have"`
}

func (d *doctorOut) probe(t *testing.T, kind string) (action string, kernel bool) {
	t.Helper()
	for _, p := range d.Probes {
		if p.Kind == kind {
			return p.Action, p.Kernel
		}
	}
	t.Fatalf("doctor --json has no probe row %q", kind)
	return "", false
}

// knownKernels are the hosts whose features are known, by kernel release
// up to its build number (the build machine's "-vNNN" suffix changes from
// boot to boot): what doctor must find there.
var knownKernels = map[string]struct {
	kprobes, fentry, cookies, btf, uprobeMulti, kprobeMulti bool
}{
	// The build machine: no kprobes (no kprobe_events, kprobe perf events
	// fail), fentry/fexit programs refused with EPERM.
	"6.18.44-fc-v": {kprobes: false, fentry: false, cookies: true, btf: true, uprobeMulti: true, kprobeMulti: false},
}

// TestDoctorHost runs 'bpftape doctor --json' on this host and checks it
// against what the host shows by other means, and on a known kernel
// against what it is known to have.
func TestDoctorHost(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	var out, errb bytes.Buffer
	code := run([]string{"doctor", "--json"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("doctor --json: exit %d: %s", code, errb.String())
	}
	var d doctorOut
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out.String())
	}
	if !d.CanRecord || d.Reason != "" {
		t.Errorf("as root where bpf.CheckFeatures passes: can_record %v, reason %q", d.CanRecord, d.Reason)
	}
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(release)); d.Facts.Release != want {
		t.Errorf("release %q, /proc/sys/kernel/osrelease says %q", d.Facts.Release, want)
	}
	if d.Facts.EUID != 0 {
		t.Errorf("euid %d", d.Facts.EUID)
	}
	if !d.Facts.RingBuf.Have || !d.Facts.BootClock.Have {
		t.Errorf("bpf.CheckFeatures passes, yet ringbuf %v, boot_clock %v", d.Facts.RingBuf.Have, d.Facts.BootClock.Have)
	}
	_, err = os.Stat("/sys/kernel/btf/vmlinux")
	if d.Facts.BTF.Have != (err == nil) {
		t.Errorf("btf.have %v, but stat /sys/kernel/btf/vmlinux: %v", d.Facts.BTF.Have, err)
	}
	_, err = os.Stat("/sys/bus/event_source/devices/kprobe")
	if d.Facts.KprobePMU != (err == nil) {
		t.Errorf("kprobe_pmu %v, but stat: %v", d.Facts.KprobePMU, err)
	}
	if d.Facts.Tracefs != "" {
		_, err := os.Stat(filepath.Join(d.Facts.Tracefs, "kprobe_events"))
		if d.Facts.KprobeEvents != (err == nil) {
			t.Errorf("kprobe_events %v, but stat: %v", d.Facts.KprobeEvents, err)
		}
	}
	// What bpftape records on any kernel it can record on, and what it does
	// not record yet.
	for _, k := range []string{"uprobe", "uretprobe", "usdt", "tracepoint"} {
		if a, kernel := d.probe(t, k); a != "use" || !kernel {
			t.Errorf("%s: %s (kernel %v), want use", k, a, kernel)
		}
	}
	for _, k := range []string{"kprobe", "kretprobe"} {
		if a, kernel := d.probe(t, k); (a == "use") != kernel {
			t.Errorf("%s: %s, kernel support %v: bpftape records them where the kernel has them", k, a, kernel)
		}
	}
	for _, k := range []string{"fentry", "fexit"} {
		if a, kernel := d.probe(t, k); (a == "use") != (kernel && d.Facts.FuncArgs.Have) {
			t.Errorf("%s: %s, kernel support %v, bpf_get_func_arg %v: bpftape records them where the kernel has both", k, a, kernel, d.Facts.FuncArgs.Have)
		}
	}
	if _, kernel := d.probe(t, "kprobe"); kernel && !d.Facts.KprobePMU && !d.Facts.KprobeEvents {
		t.Errorf("kprobe supported without a kprobe PMU or kprobe_events")
	}

	var known struct{ kprobes, fentry, cookies, btf, uprobeMulti, kprobeMulti bool }
	ok := false
	for release, k := range knownKernels {
		if strings.HasPrefix(d.Facts.Release, release) {
			known, ok = k, true
		}
	}
	if !ok {
		t.Logf("kernel %s is not in knownKernels: only the checks above ran", d.Facts.Release)
		return
	}
	if _, kernel := d.probe(t, "kprobe"); kernel != known.kprobes {
		t.Errorf("kprobe kernel support %v, known %v", kernel, known.kprobes)
	}
	if _, kernel := d.probe(t, "fentry"); kernel != known.fentry || d.Facts.FentryAttach.Have != known.fentry {
		t.Errorf("fentry kernel support %v (attach %v), known %v", kernel, d.Facts.FentryAttach.Have, known.fentry)
	}
	for _, c := range []struct {
		name      string
		got, want bool
	}{
		{"attach_cookies", d.Facts.AttachCookies.Have, known.cookies},
		{"btf", d.Facts.BTF.Have, known.btf},
		{"uprobe_multi", d.Facts.UprobeMulti.Have, known.uprobeMulti},
		{"kprobe_multi", d.Facts.KprobeMulti.Have, known.kprobeMulti},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, known %v", c.name, c.got, c.want)
		}
	}
	for _, dec := range d.Decisions {
		if dec.Subject == "attach_cookies" && (dec.Action == "use") != known.cookies {
			t.Errorf("attach_cookies: %s, but cookies known %v", dec.Action, known.cookies)
		}
	}

	// The text form says the same verdict.
	out.Reset()
	if code := run([]string{"doctor"}, &out, &errb); code != exitOK {
		t.Fatalf("doctor: exit %d", code)
	}
	// The architecture: the machine uname reports, and the build's
	// registers (this host is x86-64; the arm64 guests of make vmtest
	// check theirs).
	if d.Facts.Machine != "x86_64" || d.Facts.Arch != "amd64" {
		t.Errorf("facts: machine %q, arch %q; want x86_64, amd64", d.Facts.Machine, d.Facts.Arch)
	}
	arch := "\narchitecture amd64 (x86_64), System V AMD64: arg0..arg5 in rdi..r9, retval in rax; user stacks by frame pointers (rbp)\n"
	for _, want := range []string{"kernel " + d.Facts.Release, arch, "verdict: bpftape can record here", "\n  uprobe ", "\n  attach cookies "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor's text lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDoctorUnprivileged runs the real binary as nobody: it cannot record,
// exits 1 and says why, in JSON and on stderr.
func TestDoctorUnprivileged(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "bpftape")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe, "doctor", "--json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	r := runBin(t, cmd)
	if r.code != exitFailure {
		t.Fatalf("doctor as nobody: exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	var d doctorOut
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("doctor --json as nobody: %v\n%s", err, r.stdout)
	}
	if d.CanRecord || !strings.Contains(d.Reason, "needs root") || d.Facts.EUID != 65534 {
		t.Errorf("as nobody: can_record %v, reason %q, euid %d", d.CanRecord, d.Reason, d.Facts.EUID)
	}
	blocked := false
	for _, dec := range d.Decisions {
		blocked = blocked || dec.Subject == "privileges" && dec.Action == "refuse" && dec.Blocks
	}
	if !blocked {
		t.Errorf("no blocking privileges refusal in %+v", d.Decisions)
	}
	if a, _ := d.probe(t, "uprobe"); a != "refuse" {
		t.Errorf("uprobe: %s as nobody, want refuse", a)
	}
	if !strings.Contains(r.stderr, "bpftape doctor: bpftape cannot record on this host: recording needs root") {
		t.Errorf("stderr: %q", r.stderr)
	}
}

func TestDoctorUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"doctor", "extra"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "no arguments") {
		t.Errorf("doctor extra: exit %d, %q", code, errb.String())
	}
}
