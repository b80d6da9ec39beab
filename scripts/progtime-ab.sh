#!/bin/bash
# progtime-ab.sh BASE [ROUNDS]: the recording program's cost in the working
# tree against git revision BASE, side by side in one run (`make
# progtime-ab BASE=rev`, as root). Each round records, with each tree's
# bpftape in turn (the order alternating), a tracepoint workload (EVENTS
# write(2)s, system-wide, t:syscalls:sys_exit_write(ret)) and a uprobe
# workload (UEVENTS calls of bench_func, u:...:bench_func(arg0)), and prints
#   - bpf ns: BPF run time per event of the probe program, from
#     kernel.bpf_stats_enabled (the program's fdinfo run_time_ns/run_cnt);
#   - workload ns: the traced thread's CPU time per event;
#   - the recorder's lost count.
# The workload runs on CPU 1, the recorder on CPU 0. Needs the workload that
# bench/bench.sh builds ($BENCH_DIR/build/workload).
set -euo pipefail
base=${1:?usage: progtime-ab.sh BASE [ROUNDS]}
rounds=${2:-3}
events=${EVENTS:-1000000}
uevents=${UEVENTS:-300000}
root=$(cd "$(dirname "$0")/.." && pwd)
wl=${BENCH_DIR:-/var/tmp/bpftape-bench}/build/workload
[ -x "$wl" ] || { echo "progtime-ab: no $wl: run bash bench/bench.sh --quick once" >&2; exit 2; }
work=$(mktemp -d /var/tmp/bpftape-progtime.XXXXXX)
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$stats_was; git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git -C "$root" worktree add --detach -q "$work/base" "$base"
(cd "$work/base" && go build -o "$work/base-bpftape" ./cmd/bpftape)
(cd "$root" && go build -o "$work/new-bpftape" ./cmd/bpftape)
sysctl -qw kernel.bpf_stats_enabled=1

one() { # tree mode n spec
	local t=$1 mode=$2 n=$3 spec=$4 rec out stats cpu lost
	rm -f "$work/cap.arrow" "$work/ready"
	coproc WL { taskset -c 1 "$wl" -w -T 1 "$mode" "$n"; }
	read -r _ <&"${WL[0]}"
	taskset -c 0 "$work/$t-bpftape" record -o "$work/cap.arrow" --ready-file "$work/ready" "$spec" 2>"$work/rec.err" &
	rec=$!
	while [ ! -e "$work/ready" ]; do sleep 0.05; done
	echo go >&"${WL[1]}"
	out=$(cat <&"${WL[0]}")
	wait "$WL_PID" 2>/dev/null || true
	# Kprobe (2: uprobes) and tracepoint (5) programs of the recorder.
	stats=$(for f in /proc/$rec/fdinfo/*; do awk '/^prog_type:/ {t=$2} /^run_time_ns:/ {r=$2} /^run_cnt:/ {c=$2}
		END { if ((t == 2 || t == 5) && c > 0) print r, c }' "$f" 2>/dev/null; done | awk '{ r += $1; c += $2 } END { if (c) printf "%.1f", r / c; else print "-" }')
	kill -INT $rec
	wait $rec || true
	cpu=$(printf '%s\n' "$out" | awk '/^thread/ { for (i = 1; i < NF; i++) { if ($i == "cpu_ns") c += $(i+1); if ($i == "events") e += $(i+1) } }
		END { if (e) printf "%.1f", c / e; else print "-" }')
	lost=$(grep -o '[0-9,]* lost' "$work/rec.err" | head -1 || true)
	printf '%-4s %-10s bpf %6s ns/event  workload %7s ns/event  %s\n' "$t" "$mode" "$stats" "$cpu" "${lost:-?}"
}

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
	for t in $order; do
		one $t write "$events" 't:syscalls:sys_exit_write(ret)'
		one $t call "$uevents" "u:$wl:bench_func(arg0)"
	done
done
