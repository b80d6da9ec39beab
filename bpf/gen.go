package bpf

// The kernel side lives in bpftape.c, compiled once per architecture bpftape
// records on. Regenerate the committed objects and Go bindings
// (bpftape_x86_bpfel.{o,go}, bpftape_arm64_bpfel.{o,go}) with `go generate
// ./bpf/`; this needs clang, llvm-strip and libbpf's bpf_helpers.h (Debian:
// clang llvm libbpf-dev).

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type sample -type comm_record -type probe_spec -type arg_spec -type stack_record -type pred_op bpftape bpftape.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -DBPFTAPE_RATE_LIMIT" -target amd64,arm64 bpftaperl bpftape.c
