package host

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Capabilities bpftape record needs; CAP_SYS_ADMIN stands in for both, as
// the kernel's bpf_capable() and perfmon_capable() allow.
const (
	capSysResource = 24
	capSysAdmin    = 21
	capPerfmon     = 38
	capBPF         = 39
)

// effectiveCaps returns the effective capability set of this process.
func effectiveCaps() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("capget: %w", err)
	}
	return uint64(data[1].Effective)<<32 | uint64(data[0].Effective), nil
}

// CheckPrivileges reports whether this process may load BPF programs and
// open uprobe and tracepoint perf events: CAP_BPF and CAP_PERFMON (or
// CAP_SYS_ADMIN), which root has unless they were dropped. The error names
// what is missing.
func CheckPrivileges() error {
	eff, err := effectiveCaps()
	if err != nil {
		return err
	}
	return checkCaps(os.Geteuid(), eff)
}

func checkCaps(euid int, eff uint64) error {
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	if has(capSysAdmin) || has(capBPF) && has(capPerfmon) {
		return nil
	}
	var missing []string
	if !has(capBPF) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(capPerfmon) {
		missing = append(missing, "CAP_PERFMON")
	}
	if euid != 0 {
		return fmt.Errorf("recording needs root (or CAP_BPF and CAP_PERFMON): running as uid %d, without %s (effective capabilities %#x); run it with sudo",
			euid, strings.Join(missing, " and "), eff)
	}
	return fmt.Errorf("recording needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN): running as root, but without %s (effective capabilities %#x: dropped by a container runtime, capsh or setpriv?)",
		strings.Join(missing, " and "), eff)
}

// RaiseMemlock lifts RLIMIT_MEMLOCK on kernels before 5.11, which count BPF
// maps and programs against it (Debian 11's default is 64 KiB, less than
// one ring buffer); later kernels charge the memory cgroup instead, and the
// limit is left as it is. Raising it needs CAP_SYS_RESOURCE. (cilium/ebpf's
// rlimit package does the same, but detects the accounting by creating a
// map at init, in every bpftape process, replay included.)
func RaiseMemlock() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	if releaseAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 11) {
		return nil
	}
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, nil); err != nil {
		return fmt.Errorf("raise RLIMIT_MEMLOCK, which kernels before 5.11 count BPF memory against (needs CAP_SYS_RESOURCE): %w", err)
	}
	return nil
}
