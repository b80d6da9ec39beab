package bpf

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/internal/testutil"
)

// TestUseCookies checks the decision between attach cookies and one
// program per attachment.
func TestUseCookies(t *testing.T) {
	errProbe := errors.New("probe failed")
	for _, tc := range []struct {
		noCookies bool
		have      bool
		err       error
		want      bool
	}{
		{noCookies: false, have: true, want: true},
		{noCookies: false, have: false, want: false},
		{noCookies: false, have: false, err: errProbe, want: false}, // the fallback works everywhere
		{noCookies: true, have: true, want: false},
		{noCookies: true, have: false, want: false},
	} {
		have := func() (bool, error) { return tc.have, tc.err }
		if got := useCookies(tc.noCookies, have); got != tc.want {
			t.Errorf("noCookies %v, kernel has cookies %v (error %v): cookies %v, want %v", tc.noCookies, tc.have, tc.err, got, tc.want)
		}
	}
}

// TestFeatureTable checks that every feature has a name, a kernel version
// and a probe, and that the attach cookie and BTF, which have fallbacks,
// are not required.
func TestFeatureTable(t *testing.T) {
	version := regexp.MustCompile(`^[3-9]\.[0-9]+$`)
	seen := map[string]bool{}
	for _, f := range Features() {
		if f.Name == "" || !version.MatchString(f.Since) || f.probe == nil || seen[f.Name] {
			t.Errorf("feature %+v: no name, version or probe, or a repeated name", f)
		}
		seen[f.Name] = true
	}
	for _, name := range []string{FeatureAttachCookie, FeatureKernelBTF} {
		i := slices.IndexFunc(Features(), func(f Feature) bool { return f.Name == name })
		if i < 0 || Features()[i].Fallback == "" {
			t.Errorf("%s: not in the table, or required", name)
		}
	}
}

// TestCheckFeaturesNames checks checkFeatures' error on a made-up table:
// it names each missing required feature with its version, keeps a probe
// that could not tell, and ignores features with a fallback.
func TestCheckFeaturesNames(t *testing.T) {
	missing := func() error { return fmt.Errorf("test: %w", ebpf.ErrNotSupported) }
	broken := errors.New("test: probe failed")
	table := []Feature{
		{Name: "present", Since: "3.19", probe: func() error { return nil }},
		{Name: "ring", Since: "5.8", probe: missing},
		{Name: "clock", Since: "5.8", probe: missing},
		{Name: "odd", Since: "4.1", probe: func() error { return broken }},
		{Name: "cookie", Since: "5.15", probe: missing, Fallback: "something else"},
	}
	err := checkFeatures(table)
	var fe *FeatureError
	if !errors.As(err, &fe) || !errors.Is(err, ebpf.ErrNotSupported) || !errors.Is(err, broken) {
		t.Fatalf("error %v: not a FeatureError wrapping ErrNotSupported and the probe's error", err)
	}
	var names []string
	for _, f := range fe.Missing {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"ring", "clock"}) {
		t.Errorf("missing %v, want [ring clock]", names)
	}
	if want := "bpf: kernel lacks ring (Linux 5.8), clock (Linux 5.8)"; fe.Error() != want {
		t.Errorf("message %q, want %q", fe.Error(), want)
	}
	if err := checkFeatures(table[:1]); err != nil {
		t.Errorf("all present: %v", err)
	}
}

// TestFeaturesHost probes every feature on this kernel: the required ones
// must be there where the privileged tests run, and HaveAttachCookies must
// agree with the table's attach cookie.
func TestFeaturesHost(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	for _, f := range Features() {
		t.Logf("%-55s Linux %-5s %v", f.Name, f.Since, f.Have())
	}
	have, err := HaveAttachCookies()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(Features(), func(f Feature) bool { return f.Name == FeatureAttachCookie })
	if table := Features()[i].Have() == nil; table != have {
		t.Errorf("HaveAttachCookies %v, the table's probe %v", have, table)
	}
	// Build ids in mmap records: Linux 5.12; root may open any perf event.
	have, err = HaveMmapBuildID()
	if err != nil {
		t.Fatal(err)
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil && os.Geteuid() == 0 {
		var major, minor int
		fmt.Sscanf(unix.ByteSliceToString(uts.Release[:]), "%d.%d", &major, &minor)
		if want := major > 5 || major == 5 && minor >= 12; have != want {
			t.Errorf("HaveMmapBuildID %v on Linux %d.%d", have, major, minor)
		}
	}
}

// withoutCookieHelper loads bpftape's spec with every call of
// bpf_get_attach_cookie replaced by a call of a helper no kernel has: on
// this kernel, the programs then verify only where a kernel before 5.15
// would verify them. It reports how many calls it replaced.
func withoutCookieHelper(calls *int) func() (*ebpf.CollectionSpec, error) {
	return func() (*ebpf.CollectionSpec, error) {
		spec, err := loadBpftape()
		if err != nil {
			return nil, err
		}
		for _, p := range spec.Programs {
			for i, ins := range p.Instructions {
				if ins.IsBuiltinCall() && ins.Constant == int64(asm.FnGetAttachCookie) {
					p.Instructions[i].Constant = 0xfff0
					*calls++
				}
			}
		}
		return spec, nil
	}
}

// TestNoCookiesVerifier checks what the fallback for kernels without
// attach cookies relies on: with fixed_spec set in a frozen .rodata, the
// verifier never visits the bpf_get_attach_cookie call, so a kernel that
// lacks the helper loads the program. The helper is replaced by a made-up
// one: the programs with cookies then fail to load, the per-attachment
// copies load and record, each with its own spec and every map shared.
func TestNoCookiesVerifier(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	calls := 0
	if objs, err := loadFrom(withoutCookieHelper(&calls), Options{}); err == nil {
		objs.Close()
		have, _ := HaveAttachCookies()
		if have {
			t.Fatal("the programs with cookies loaded with an unknown helper in place of bpf_get_attach_cookie")
		}
	} else {
		msg := err.Error() // the verifier's log ends with its complaint
		t.Logf("with cookies, as expected: ...%s", msg[max(0, len(msg)-300):])
	}
	if calls != 6 {
		t.Fatalf("replaced %d calls of bpf_get_attach_cookie, want 6 (uprobe, kprobe.multi, tracepoint, fentry, fexit, perf_event)", calls)
	}

	objs, err := loadFrom(withoutCookieHelper(&calls), Options{NoCookies: true})
	if err != nil {
		t.Fatalf("without cookies: %v", err)
	}
	t.Cleanup(func() { objs.Close() })
	if err := objs.Arm(true); err != nil {
		t.Fatal(err)
	}
	if objs.Cookies() || objs.ProbeUprobe != nil || objs.ProbeTracepoint != nil {
		t.Fatalf("NoCookies: Cookies %v, ProbeUprobe %v, ProbeTracepoint %v", objs.Cookies(), objs.ProbeUprobe, objs.ProbeTracepoint)
	}
	if _, cookie, err := objs.TracepointProgram(5, 0); err != nil || cookie != 0 {
		t.Fatalf("tracepoint program: cookie %d, %v", cookie, err)
	}

	exe := buildWorkload(t)
	const n = 500
	w := startWorkload(t, exe, "burst", fmt.Sprint(n))
	// Two programs on the same function, for specs 3 and 7: each must
	// record its own spec's value, whatever the cookie (0).
	putSpec(t, objs, 3, spec(10, ClassArgs1, reg(RegDI, 8, false)))
	putSpec(t, objs, 7, spec(11, ClassArgs1, reg(RegSI, 8, false)))
	var progs []*ebpf.Program
	for _, idx := range []uint32{3, 7} {
		p, cookie, err := objs.UprobeProgram(idx)
		if err != nil || cookie != 0 {
			t.Fatalf("uprobe program for spec %d: cookie %d, %v", idx, cookie, err)
		}
		attachUprobe(t, exe, "work", p, cookie, w.pid(), false)
		progs = append(progs, p)
	}
	rd := newReader(t, objs)
	c := collect(t, rd)
	w.run(t)
	byProbe := map[uint16][]uint64{}
	for _, raw := range c.finish(t) {
		h, err := DecodeHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		if h.ProbeID != CommProbeID {
			byProbe[h.ProbeID] = append(byProbe[h.ProbeID], Arg(raw, 0))
		}
	}
	if len(byProbe[10]) != n || len(byProbe[11]) != n || len(byProbe) != 2 {
		t.Fatalf("events by probe id: %d of 10, %d of 11, %d ids; want %d, %d, 2", len(byProbe[10]), len(byProbe[11]), len(byProbe), n, n)
	}
	for i := range n {
		if byProbe[10][i] != uint64(1+i) || byProbe[11][i] != 2 {
			t.Fatalf("call %d: a = %d, b = %d; want %d, 2", i, byProbe[10][i], byProbe[11][i], 1+i)
		}
	}

	// The copies share every map but .rodata.
	ids := func(p *ebpf.Program) []ebpf.MapID {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		m, ok := info.MapIDs()
		if !ok {
			t.Skip("skipping the map check: the kernel does not list a program's maps")
		}
		return m
	}
	a, b := ids(progs[0]), ids(progs[1])
	var shared []string
	for _, m := range []*ebpf.Map{objs.Rings, objs.ProbeSpecs, objs.Lost, objs.CPUState, objs.globals[0]} {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		if !slices.Contains(a, id) || !slices.Contains(b, id) {
			t.Errorf("map %s (id %d) not used by both copies: %v, %v", info.Name, id, a, b)
		}
		shared = append(shared, info.Name)
	}
	rodata, _ := objs.globals[1].Info()
	rid, _ := rodata.ID()
	if slices.Contains(a, rid) || slices.Contains(b, rid) || len(a) != len(b) {
		t.Errorf("the copies use the shared .rodata (id %d) or differ in their maps: %v, %v", rid, a, b)
	}
	t.Logf("copies share %s", strings.Join(shared, ", "))
}

// TestTaskOffsetsWithoutBTF checks that a kernel without BTF gets one
// error, naming the missing BTF, from everything that needs it.
func TestTaskOffsetsWithoutBTF(t *testing.T) {
	absent := func() (*btf.Spec, error) { return nil, fmt.Errorf("test: no BTF: %w", ebpf.ErrNotSupported) }
	to := readTaskOffsets(absent)
	for what, err := range map[string]error{"comm": to.commErr, "tgid": to.tgidErr, "thread": to.threadErr} {
		if !errors.Is(err, ErrNoKernelBTF) || !errors.Is(err, ebpf.ErrNotSupported) {
			t.Errorf("%s: %v does not wrap ErrNoKernelBTF and ErrNotSupported", what, err)
		}
	}
	if !strings.Contains(ErrNoKernelBTF.Error(), "/sys/kernel/btf/vmlinux") {
		t.Errorf("%v does not name /sys/kernel/btf/vmlinux", ErrNoKernelBTF)
	}

	// With the kernel's BTF, where it has some: the offsets that the
	// exported functions return.
	if _, err := btf.LoadKernelSpec(); err != nil {
		t.Skipf("skipping the kernel's offsets: %v", err)
	}
	to = readTaskOffsets(btf.LoadKernelSpec)
	comm, err := TaskCommOffset()
	if err != nil || to.commErr != nil || comm != to.comm || comm == 0 {
		t.Errorf("comm at %d (%v), TaskCommOffset %d (%v)", to.comm, to.commErr, comm, err)
	}
	tgid, err := TaskTgidOffset()
	if err != nil || tgid != to.tgid || tgid == 0 || tgid == comm {
		t.Errorf("tgid at %d (%v), TaskTgidOffset %d (%v)", to.tgid, to.tgidErr, tgid, err)
	}
}
