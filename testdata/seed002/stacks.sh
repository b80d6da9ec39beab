#!/bin/sh
# Seed 002's stack analyses (Brendan Gregg's BPF tools page: profile,
# stackcount), each from a bpftape capture: record the stacks once, then ask
# the capture what the BCC tool would have printed live, or draw it.
#
#   sh testdata/seed002/stacks.sh [DIR]
#
# Runs as root. Captures go to DIR (default: a new temporary directory).
# PROF_CMD is profiled (default: testdata/stacks/chain.c, built with frame
# pointers, calling leaf 300 million times: about a second; without a C
# compiler, a busy shell loop, whose stacks break in code built without
# frame pointers, as Debian's is); IO_CMD does block I/O (default: dd
# writing 1 MiB with O_DIRECT into DIR). The
# submit_bio example needs kprobes: on a kernel without them it says so
# and the others still run. make vmtest runs this with its own workloads.
set -eu
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
if [ -z "${PROF_CMD:-}" ]; then
	PROF_CMD="sh -c 'i=0; while [ \$i -lt 300000 ]; do i=\$((i+1)); done'"
	chain=$(dirname "$0")/../stacks/chain.c
	if [ -e "$chain" ] && cc -O0 -fno-omit-frame-pointer -fcf-protection=none -o "$dir/chain" "$chain" 2>/dev/null; then
		PROF_CMD="$dir/chain 300000000"
	fi
fi
: "${IO_CMD:=dd if=/dev/zero of=$dir/io.tmp bs=4096 count=256 oflag=direct}"
step() { printf '\n## %s\n$ %s\n' "$1" "$2"; }

# profile -F 49: every CPU sampled 49 times a second, user and kernel
# stacks, here for the command's life (-c); the folded stacks are what
# profile -f prints, the flame graph what flamegraph.pl draws from them.
step "profile -F 49" "bpftape stacks prof.arrow"
bpftape record -o "$dir/prof.arrow" --force -c "$PROF_CMD" profile:hz:49 >/dev/null
bpftape stacks "$dir/prof.arrow"
step "profile -F 49 | flamegraph.pl" "bpftape flamegraph prof.arrow -o prof.svg"
bpftape flamegraph "$dir/prof.arrow" -o "$dir/prof.svg" --force

# stackcount t:block:block_rq_insert: the kernel stacks that insert block
# requests, with their counts.
step "stackcount t:block:block_rq_insert" "bpftape stacks --text rq.arrow"
bpftape record -o "$dir/rq.arrow" --force -c "$IO_CMD" 't:block:block_rq_insert(dev,sector,kstack)' >/dev/null 2>&1
bpftape stacks --text "$dir/rq.arrow"

# stackcount submit_bio (bpftrace: kprobe:submit_bio { @[kstack] = count(); }).
step "stackcount submit_bio" "bpftape stacks --text bio.arrow"
if bpftape record -o "$dir/bio.arrow" --force -c "$IO_CMD" 'k:submit_bio(kstack)' >/dev/null 2>"$dir/bio.err"; then
	bpftape stacks --text "$dir/bio.arrow"
else
	echo "(not on this kernel: $(tail -n 1 "$dir/bio.err"))"
fi
