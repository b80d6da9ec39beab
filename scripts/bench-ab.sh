#!/bin/bash
# bench-ab.sh BASE [ROUNDS] [EVENTS]: the format and replay figures of the
# working tree against git revision BASE, measured side by side in one run
# (`make bench-ab BASE=rev`). Each round runs both trees one after the other,
# the order alternating, so that a noisy machine weighs on both alike:
#   - format's BenchmarkWriter (zstd): ns/event, cpu-ns/event, bytes/event;
#   - `bpftape hist` on a seed-like capture of EVENTS events (default 20M)
#     written by that tree's own writer (bench/driver synth): million events
#     per second of CPU (user + sys) and peak RSS.
# Prints one line per round and tree, then the medians. Needs no root.
set -euo pipefail
base=${1:?usage: bench-ab.sh BASE [ROUNDS] [EVENTS]}
rounds=${2:-3}
events=${3:-20000000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /var/tmp/bpftape-ab.XXXXXX)
trap 'git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git -C "$root" worktree add --detach -q "$work/base" "$base"
for t in base new; do
	src=$root
	[ $t = base ] && src=$work/base
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$work/$t-bpftape" ./cmd/bpftape && go build -o "$work/$t-driver" ./bench/driver &&
		go test -c -o "$work/$t-format.test" ./format/)
	"$work/$t-driver" synth -o "$work/$t.arrow" -n "$events" >/dev/null
done

one() { # tree round
	local t=$1 w h
	w=$(cd "$root/format" && "$work/$t-format.test" -test.run '^$' -test.bench '^BenchmarkWriter$/zstd' \
		-test.benchtime 2000000x | awk '/^BenchmarkWriter/ {
			for (i = 1; i <= NF; i++) { if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "cpu-ns/event") cpu = $i; if ($(i+1) == "bytes/event") by = $i }
		} END { print ns, cpu, by }')
	h=$( { /usr/bin/time -f '%U %S %M' "$work/$t-bpftape" hist "$work/$t.arrow" rx arg2 >/dev/null; } 2>&1 | tail -1)
	echo "$t $w $h" | awk -v n="$events" '{ printf "%-4s writer %6.1f ns/event %6.1f cpu-ns/event %6.3f bytes/event | hist %6.1f M events/s of CPU, peak RSS %6.1f MiB\n",
		$1, $2, $3, $4, n / ($5 + $6) / 1e6, $7 / 1024 }'
}

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
	for t in $order; do one $t | tee -a "$work/lines"; done
done
echo "medians of $rounds rounds (base $(git -C "$root" rev-parse --short "$base"), new = working tree):"
for t in base new; do
	grep "^$t " "$work/lines" | awk -v t=$t '{ ns[NR] = $3; cpu[NR] = $5; by[NR] = $7; hist[NR] = $11; rss[NR] = $18 }
		function med(a, n,   i, j, x) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }; return a[int((n + 1) / 2)] }
		END { n = NR; printf "%-4s writer %6.1f ns/event %6.1f cpu-ns/event %6.3f bytes/event | hist %6.1f M events/s of CPU, peak RSS %6.1f MiB\n", t, med(ns, n), med(cpu, n), med(by, n), med(hist, n), med(rss, n) }'
done
