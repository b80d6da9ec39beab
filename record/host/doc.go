// Package host says what the host offers a recorder: privileges and
// capabilities (CheckPrivileges), the kernel's BPF and tracing features
// (ExamineHost, HostFacts), what bpftape doctor makes of them (Diagnose),
// the kernel's function names, and why a kind of probe is unavailable
// here, with what to record instead.
//
// It is apart from resolving probes and from recording: it looks at the
// kernel and the system, never at a probe spec's binary or a capture, and
// both record/resolve and record use it.
package host
