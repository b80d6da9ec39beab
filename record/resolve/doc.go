// Package resolve turns probe specs (package probespec) into probes: it
// finds each spec's binary, symbols, USDT sites, tracepoint format or
// kernel function, resolves its fields and expressions (DWARF or BTF) and
// compiles its predicate (the /FILTER/ and --pid/--comm), giving each
// Probe the Attachments and BPF probe specs a recording loads. It also
// expands kernel wildcards and lists what can be probed (List, for
// bpftape list).
//
// It is apart from the recording session (package record): it attaches
// nothing and loads no program, so listing and resolving can be used and
// tested without a recording. What the host offers comes from record/host.
package resolve
