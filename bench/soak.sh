#!/usr/bin/env bash
# soak.sh: `make soak`, the long-capture benchmark: does the
# recorder's memory stay flat over a long capture at a high event rate?
#
# Builds bin/bpftape and the bench workload (bench/workload.c) into
# $BENCH_DIR/build (default /var/tmp/bpftape-bench), then runs
#
#   bin/bpftape record -d SOAK_SECONDS -c 'workload -T 1 call -t ...' \
#       'u:workload:bench_func(arg0)'
#
# one workload thread calling the probed function as fast as it can (on this
# 2-core VM a few hundred thousand events a second), and samples the
# recorder's VmRSS and VmHWM (/proc/PID/status) and the capture's size every
# SOAK_INTERVAL seconds. It prints the curve, the events recorded and lost
# and the file size, and fails when
#
#   - the RSS grows by more than SOAK_RSS_GROWTH_KIB (default 8192 KiB) over
#     the second half of the run: the largest VmRSS sampled in the second
#     half minus the first sample of the second half (the first half is the
#     warm-up: buffers, zstd windows and the Go heap reach their size), or
#   - the recorder fails, or any probe or BPF link of the recorder is left
#     behind (tracefs uprobe_events, or a process holding one of its links).
#
# SOAK_MODE=flight (make soak SOAK_MODE=flight) soaks the flight recorder
# instead: the same recording with --flight SOAK_FLIGHT (default 30s), its
# ring turning over all along, and a SIGUSR1 every SOAK_SNAPSHOT_EVERY
# seconds (default 60), each of whose snapshots must be a complete capture
# of about SOAK_FLIGHT; the file column is then the snapshots written.
#
# Environment: SOAK_SECONDS (default 600), SOAK_INTERVAL (default 10),
# SOAK_RSS_GROWTH_KIB, SOAK_KEEP=1 keeps the capture ($BENCH_DIR/soak/),
# BENCH_DIR. Needs root. The machine's load average is printed at the start
# and the end: other work competes for the CPUs (more losses, the same RSS).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
dir=${BENCH_DIR:-/var/tmp/bpftape-bench}
build=$dir/build
work=$dir/soak
seconds=${SOAK_SECONDS:-600}
interval=${SOAK_INTERVAL:-10}
bound=${SOAK_RSS_GROWTH_KIB:-8192}
mode=${SOAK_MODE:-file}
flight=${SOAK_FLIGHT:-30s}
every=${SOAK_SNAPSHOT_EVERY:-60}
case $mode in file | flight) ;; *)
	echo "soak: SOAK_MODE is file or flight" >&2
	exit 2;;
esac
tracefs=/sys/kernel/tracing

if [ "$(id -u)" != 0 ]; then
	echo "soak: bpftape record loads BPF programs: run as root (sudo make soak)" >&2
	exit 1
fi
case "$seconds$interval$bound" in *[!0-9]*)
	echo "soak: SOAK_SECONDS, SOAK_INTERVAL and SOAK_RSS_GROWTH_KIB are whole numbers" >&2
	exit 2;;
esac
if [ "$seconds" -lt $((4 * interval)) ]; then
	echo "soak: SOAK_SECONDS ($seconds) must be at least 4 sampling intervals ($interval s)" >&2
	exit 2
fi

missing=""
if ! command -v gcc >/dev/null; then
	missing="gcc systemtap-sdt-dev"
elif ! echo '#include <sys/sdt.h>' | gcc -E - >/dev/null 2>&1; then
	missing="systemtap-sdt-dev"
fi
if [ -n "$missing" ]; then
	echo "soak: installing: $missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
mkdir -p "$build"
go build -o bin/bpftape ./cmd/bpftape
# The soak has its own copy of the workload: uprobes attach per inode, and
# `make bench` may be tracing build/workload at the same time.
gcc -O2 -fno-omit-frame-pointer -fcf-protection=none -pthread -Wall -Werror -o "$build/soak-workload" bench/workload.c

rm -rf "$work"
mkdir -p "$work"
out=$work/soak.arrow
log=$work/record.log
ready=$work/ready
curve=$work/curve.txt
links=""
rec=""

ours() { grep -F "$build/soak-workload" || true; }
cleanup() {
	status=$?
	if [ -n "$rec" ] && kill -0 "$rec" 2>/dev/null; then
		kill -TERM "$rec" 2>/dev/null || true
		wait "$rec" 2>/dev/null || true
	fi
	left=$(ours <"$tracefs/uprobe_events")
	# A uprobe link lives as long as a file descriptor refers to it.
	for id in $links; do
		if grep -lsx "link_id:[[:space:]]*$id" /proc/[0-9]*/fdinfo/* >/dev/null 2>&1; then
			left="$left${left:+
}BPF link $id (still held by a process)"
		fi
	done
	if [ "${SOAK_KEEP:-}" != 1 ]; then
		rm -f "$out" "$work"/soak-[0-9][0-9][0-9][0-9].arrow
	fi
	if [ -n "$left" ]; then
		echo "soak: FAIL: probes left behind:" >&2
		printf '%s\n' "$left" >&2
		exit 1
	fi
	echo "soak: no probes left behind ($tracefs/uprobe_events and the recorder's $(echo $links | wc -w) BPF links)" >&2
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "soak: ${seconds}s of bpftape record on one workload thread calling bench_func as fast as it can"
flightargs=()
if [ "$mode" = flight ]; then
	echo "soak: flight recorder mode: --flight $flight, a snapshot (SIGUSR1) every ${every}s"
	flightargs=(--flight "$flight")
fi
echo "soak: $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# The workload runs longer than the capture: -d ends the capture (and
# SIGTERMs the workload), so the rate holds until the end.
bin/bpftape record -o "$out" --ready-file "$ready" -d "${seconds}s" "${flightargs[@]}" \
	-c "$build/soak-workload -T 1 call -t $((seconds + 60))" \
	"tick=u:$build/soak-workload:bench_func(arg0)" >"$work/workload.out" 2>"$log" &
rec=$!
for _ in $(seq 200); do
	[ -e "$ready" ] && break
	kill -0 "$rec" 2>/dev/null || break
	sleep 0.05
done
if [ ! -e "$ready" ]; then
	echo "soak: FAIL: the recorder did not get ready" >&2
	cat "$log" >&2
	exit 1
fi
links=$(grep -hs '^link_id:' /proc/"$rec"/fdinfo/* | awk '{print $2}' | sort -u | tr '\n' ' ')
if [ -z "$links" ]; then
	echo "soak: FAIL: the recorder holds no BPF link once ready" >&2
	exit 1
fi

printf '%8s %10s %10s %12s\n' "t (s)" "VmRSS KiB" "VmHWM KiB" "file MiB" | tee "$curve"
t0=$(date +%s)
next=$interval
nextsnap=$every
while kill -0 "$rec" 2>/dev/null; do
	now=$(($(date +%s) - t0))
	if [ "$mode" = flight ] && [ "$now" -ge "$nextsnap" ] && [ "$now" -lt "$seconds" ]; then
		kill -USR1 "$rec" 2>/dev/null || true
		nextsnap=$((nextsnap + every))
	fi
	if [ "$now" -ge "$next" ]; then
		st=/proc/$rec/status
		rss=$(awk '/^VmRSS:/ {print $2}' "$st" 2>/dev/null || true)
		hwm=$(awk '/^VmHWM:/ {print $2}' "$st" 2>/dev/null || true)
		[ -n "$rss" ] || break
		if [ "$mode" = flight ]; then
			size=$( (cat "$work"/soak-[0-9][0-9][0-9][0-9].arrow 2>/dev/null || true) | wc -c)
		else
			size=$(stat -c %s "$out" 2>/dev/null || echo 0)
		fi
		printf '%8d %10d %10d %12.1f\n' "$now" "$rss" "$hwm" "$(awk -v s="$size" 'BEGIN {print s / 1048576}')" | tee -a "$curve"
		next=$((next + interval))
	fi
	sleep 0.5
done
set +e
wait "$rec"
code=$?
rec=""
set -e
echo "soak: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "soak: recorder exit status $code; its summary:"
tr '\r' '\n' <"$log" | grep -av -e '^$' -e '^.\[Krecording' | sed 's/^/  /'
# bpftape record exits 0 when -d ends the capture (and SIGTERMs the
# workload): docs/exit-status.md.
if [ "$code" != 0 ]; then
	echo "soak: FAIL: bpftape record exited with $code" >&2
	exit 1
fi
if ! grep -q 'stopped: duration' "$log"; then
	echo "soak: FAIL: the capture did not run its full ${seconds}s" >&2
	exit 1
fi

if [ "$mode" = flight ]; then
	# Every SIGUSR1 gave a snapshot, each a complete capture of about
	# --flight (a batch more at most), the last one shown.
	want=$(((seconds - 1) / every))
	snaps=$( (ls "$work"/soak-[0-9][0-9][0-9][0-9].arrow 2>/dev/null || true) | wc -l)
	flightns=$(awk -v f="$flight" 'BEGIN { n = f + 0; if (f ~ /ms$/) n /= 1000; else if (f ~ /m$/) n *= 60; printf "%.0f", n * 1e9 }')
	for f in "$work"/soak-[0-9][0-9][0-9][0-9].arrow; do
		[ -e "$f" ] || continue
		js=$(bin/bpftape info --json "$f") || { echo "soak: FAIL: $f does not read" >&2; exit 1; }
		span=$(printf '%s' "$js" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["last_event_ns"] - d["first_event_ns"])')
		if [ "$span" -gt $((flightns + 1500000000)) ] || [ "$span" -lt $((flightns - 1500000000)) ]; then
			echo "soak: FAIL: $f spans ${span} ns, not about --flight $flight" >&2
			exit 1
		fi
	done
	echo "soak: $snaps snapshots of about $flight each (want $want)"
	if [ "$snaps" -lt "$want" ]; then
		echo "soak: FAIL: $snaps snapshots for $want SIGUSR1" >&2
		exit 1
	fi
	last=$(ls "$work"/soak-[0-9][0-9][0-9][0-9].arrow | tail -1)
	bin/bpftape info "$last" | sed 's/^/  info: /'
	size=$(cat "$work"/soak-[0-9][0-9][0-9][0-9].arrow | wc -c)
else
	bin/bpftape info "$out" | sed 's/^/  info: /'
	size=$(stat -c %s "$out")
fi
summary=$(grep -a '\[ bpftape record: [0-9,]* events' "$log" | tail -1)
events=$(echo "$summary" | sed -E 's/.*record: ([0-9,]+) events.*/\1/')
lost=$(echo "$summary" | sed -E 's/.*\), ([0-9,]+) lost.*/\1/')
echo "soak: recorded $events events, lost $lost, file $size bytes ($(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}') MiB)"

# Flat RSS: over the second half, the largest sample minus the first one.
awk -v half=$((seconds / 2)) -v bound="$bound" '
	NR > 1 && $1 >= half { if (first == "") first = $2; if ($2 > top) top = $2; n++ }
	END {
		if (n < 2) { print "soak: FAIL: fewer than 2 samples in the second half"; exit 1 }
		growth = top - first
		printf "soak: RSS over the second half (%d samples from t=%ds): first %d KiB, max %d KiB, growth %d KiB (bound %d KiB)\n", n, half, first, top, growth, bound
		if (growth > bound) { print "soak: FAIL: RSS grew beyond the bound"; exit 1 }
		print "soak: PASS: RSS flat"
	}' "$curve"
