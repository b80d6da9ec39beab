#!/bin/sh
# Seed 002's kernel-function analyses (Brendan Gregg's BPF tools page), each
# from a bpftape capture: record once, then ask the capture what the BCC tool
# would have printed live.
#
#   sh testdata/seed002/examples.sh [DIR]
#
# Runs as root, on a kernel with kprobes and, for fentry/fexit, BTF and
# Linux 5.17 or later (bpftape doctor says). Captures go to DIR (default: a
# new temporary directory). The workloads default to commands every system
# has; set READ_CMD, OPEN_CMD, TCP_CMD and FUNC_CMD to trace others (make
# vmtest runs this with its own workload, which prints its ground truth).
set -eu
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
: "${READ_CMD:=dd if=/dev/zero of=/dev/null bs=512 count=1000}"
: "${OPEN_CMD:=ls /etc}"
: "${FUNC_CMD:=$READ_CMD}"
step() { printf '\n## %s\n$ %s\n' "$1" "$2"; }

# The recorder's summary goes to stderr, the workloads' output to /dev/null.
# funclatency -u vfs_read: fentry and fexit pair on each thread.
step "funclatency -u vfs_read" "bpftape latency -u vfs.arrow vfs_read vfs_read:return"
bpftape record -o "$dir/vfs.arrow" --force -c "$READ_CMD" 'f:vfs_read(count)' 'fr:vfs_read(retval)' >/dev/null
bpftape latency -u "$dir/vfs.arrow" vfs_read vfs_read:return

# bpftrace: kprobe:vfs_read { @start[tid] = nsecs; } kretprobe:vfs_read /@start[tid]/ { @ns = hist(nsecs - @start[tid]); }
step "bpftrace vfs_read latency, from kprobes" "bpftape latency kvfs.arrow vfs_read vfs_read:return"
bpftape record -o "$dir/kvfs.arrow" --force -c "$READ_CMD" 'k:vfs_read(arg2)' 'kr:vfs_read' >/dev/null
bpftape latency "$dir/kvfs.arrow" vfs_read vfs_read:return

# trace 'p::do_sys_open "%s", arg2' (do_sys_openat2 on current kernels) and
# trace 'r::do_sys_open "ret: %d", retval'.
step "trace 'do_sys_openat2 \"%s\", filename' and 'r::do_sys_openat2 \"ret: %d\", retval'" \
	"bpftape events open.arrow -f 'do_sys_openat2 \"%s\", filename' -f 'do_sys_openat2:return \"ret: %d\", retval'"
bpftape record -o "$dir/open.arrow" --force -c "$OPEN_CMD" 'f:do_sys_openat2(str(filename))' 'fr:do_sys_openat2(retval:s32)' >/dev/null
bpftape events "$dir/open.arrow" -f 'do_sys_openat2 "%s", filename' -f 'do_sys_openat2:return "ret: %d", retval'

# argdist -H 'p::tcp_sendmsg(struct sock *sk, struct msghdr *msg, size_t size):u32:size'
if [ -n "${TCP_CMD:-}" ]; then
	step "argdist -H tcp_sendmsg size" "bpftape hist tcp.arrow tcp_sendmsg size"
	bpftape record -o "$dir/tcp.arrow" --force -c "$TCP_CMD" 'f:tcp_sendmsg(size:u32)' >/dev/null
	bpftape hist "$dir/tcp.arrow" tcp_sendmsg size
fi

# funccount 'vfs_*': one probe per matching function, counted per probe.
step "funccount 'vfs_*'" "bpftape count funcs.arrow"
bpftape record -o "$dir/funcs.arrow" --force -c "$FUNC_CMD" 'k:vfs_*' >/dev/null
bpftape count "$dir/funcs.arrow"
