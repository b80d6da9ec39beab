#!/usr/bin/env bash
# bench.sh [--quick] [DRIVER FLAGS]: `make bench` and `make bench-quick`.
#
# Installs what it needs (scripts/deps.sh bench), builds bin/bpftape, the workload
# (checking that its probed functions start with push %rbp and that its
# USDT site is one nop), the launcher and the Go driver, runs the driver
# (bench/driver: the table and the targets on stdout, progress on stderr),
# then removes every perf probe it may have added and fails if any of its
# probes is left in tracefs. Scratch files go to $BENCH_DIR
# (default /var/tmp/bpftape-bench); the last table is kept there as
# last-table.txt. Needs root: every tool loads BPF programs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
dir=${BENCH_DIR:-/var/tmp/bpftape-bench}
build=$dir/build
work=$dir/run
tracefs=/sys/kernel/tracing

if [ "$(id -u)" != 0 ]; then
	echo "bench: every tool loads BPF programs: run as root (sudo make bench)" >&2
	exit 1
fi
mkdir -p "$build"
sh scripts/deps.sh bench "$dir/headers"

# bpftape as the release binaries are built (scripts/dist.sh): static,
# which starts in about 4 ms less than a binary linked against libc, and
# every verb's time includes its start.
CGO_ENABLED=0 go build -trimpath -o bin/bpftape ./cmd/bpftape
go build -o "$build/driver" ./bench/driver
gcc -O2 -g -fno-omit-frame-pointer -fcf-protection=none -pthread -Wall -Werror -o "$build/workload" bench/workload.c
gcc -O2 -Wall -Werror -o "$build/launch" bench/launch.c

# uprobes emulate push %rbp; any other first instruction is single-stepped
# out of line and would make the uprobe numbers meaningless.
disasm=$(objdump -d --no-show-raw-insn "$build/workload")
for f in bench_func bench_ret bench_req; do
	first=$(printf '%s\n' "$disasm" | awk -v f="<$f>:" 'found == 1 { sub(/^[ \t]*[0-9a-f]+:[ \t]*/, ""); print; found = 2 } $2 == f { found = 1 }')
	if ! printf '%s\n' "$first" | grep -Eq '^push +%rbp$'; then
		echo "bench: FATAL: $f in $build/workload starts with '$first', not 'push %rbp': uprobes would single-step it" >&2
		echo "bench: (built with $(gcc --version | head -1); check -fno-omit-frame-pointer -fcf-protection=none)" >&2
		exit 1
	fi
done
sites=$(readelf -n "$build/workload" | grep -c 'Name: tick' || true)
if [ "$sites" != 1 ]; then
	echo "bench: FATAL: $build/workload has $sites USDT sites bpftape_bench:tick, want 1" >&2
	exit 1
fi

ours() { grep -E 'bpftapebench|sdt_bpftape_bench|bpftape-bench' || true; }
cleanup() {
	status=$?
	PERF_BUILDID_DIR=$work/perf-buildid perf probe -q -d 'bpftapebench:*' >/dev/null 2>&1 || true
	PERF_BUILDID_DIR=$work/perf-buildid perf probe -q -d 'sdt_bpftape_bench:*' >/dev/null 2>&1 || true
	left=$( (cat "$tracefs/uprobe_events" 2>/dev/null; perf probe -l 2>/dev/null) | ours)
	rm -rf "$work"
	if [ -n "$left" ]; then
		echo "bench: FAIL: probes left behind:" >&2
		printf '%s\n' "$left" >&2
		exit 1
	fi
	echo "bench: no probes left behind ($tracefs/uprobe_events and perf probe -l hold none of ours)" >&2
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$work"
mkdir -p "$work"
"$build/driver" run --work "$work" --bpftape bin/bpftape --workload "$build/workload" --launch "$build/launch" \
	--bcc bench/bcc_hist.py --bcc-profile-wrapper bench/bcc_profile.py --headers "$dir/headers" "$@" | tee "$dir/last-table.txt"
