#!/bin/sh
# Seed 002's block I/O latency (BCC's biolatency; bpftrace's biolatency.bt
# on the block tracepoints), from a bpftape capture: record each request's
# issue and completion once, then ask the capture what biolatency, -T 1
# and -D would have printed live.
#
#   sh testdata/seed002/biolatency.sh [DIR]
#
# Runs as root. The capture goes to DIR (default: a new temporary
# directory). A request completes in an interrupt, in whatever process runs
# then, so the probes record every process (not -c): the recorder runs in
# the background while IO_CMD runs and stops once no disk has a request in
# flight. IO_CMD defaults to dd writing N (default 2000) 4 KiB blocks with
# O_DIRECT, each its own request, to a file in IO_DIR (default /var/tmp),
# which must be on a disk, not tmpfs; the file is removed afterwards.
set -eu
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
: "${N:=2000}"
: "${IO_DIR:=/var/tmp}"
fstype=$(stat -f -c %T "$IO_DIR")
case $fstype in
tmpfs | ramfs)
	echo "biolatency.sh: $IO_DIR is on $fstype, not a disk: set IO_DIR to a directory on one" >&2
	exit 1
	;;
esac
io=$(mktemp "$IO_DIR/bpftape-bio.XXXXXX")
rec=
cleanup() {
	rm -f "$io"
	if [ -n "$rec" ]; then kill -INT "$rec" 2>/dev/null || true; fi
}
trap cleanup EXIT
: "${IO_CMD:=dd if=/dev/zero of=$io bs=4k count=$N oflag=direct}"
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
step() { printf '\n## %s\n$ %s\n' "$1" "$2"; }

# The fields are the tracepoints' own (/sys/kernel/tracing/events/block/*/format):
# dev and sector name a request in both.
rm -f "$dir/ready"
bpftape record -o "$dir/bio.arrow" --force --ready-file "$dir/ready" \
	'issue=t:block:block_rq_issue(dev,sector,nr_sector)' \
	'complete=t:block:block_rq_complete(dev,sector,nr_sector,error)' 2>"$dir/record.err" &
rec=$!
i=0
while [ ! -e "$dir/ready" ]; do
	if ! kill -0 "$rec" 2>/dev/null || [ $i -ge 600 ]; then
		echo "biolatency.sh: the recorder did not get ready:" >&2
		cat "$dir/record.err" >&2
		exit 1
	fi
	i=$((i + 1))
	sleep 0.05
done
sh -c "$IO_CMD" 2>"$dir/io.err"
# Stop once every disk has had no request in flight for three looks in a
# row (at most 5 s): a request issued but not completed when the window
# closes would count as an issue without completion.
idle=0 i=0
while [ $idle -lt 3 ] && [ $i -lt 100 ]; do
	if [ "$(cat /sys/block/*/inflight | awk '{ n += $1 + $2 } END { print n + 0 }')" = 0 ]; then
		idle=$((idle + 1))
	else
		idle=0
	fi
	i=$((i + 1))
	sleep 0.05
done
kill -INT "$rec"
status=0
wait "$rec" || status=$?
rec=
if [ $status -ne 0 ]; then
	cat "$dir/record.err" >&2
	exit $status
fi
cat "$dir/record.err" >&2

# biolatency: microseconds from issue to completion, the pair keyed by
# device and sector (bpftrace: @start[args->dev, args->sector] = nsecs).
# bpftape's programs leave out the events of the recorder's own process,
# and a completion that interrupts the recorder is one: its issue counts as
# without completion (up to a few percent on a small busy machine).
step "biolatency" "bpftape latency -u bio.arrow issue complete --key dev,sector"
bpftape latency -u "$dir/bio.arrow" issue complete --key dev,sector

# biolatency -T 1: a histogram per second, after the time it ended.
step "biolatency -T 1" "bpftape latency -u bio.arrow issue complete --key dev,sector --interval 1s"
bpftape latency -u "$dir/bio.arrow" issue complete --key dev,sector --interval 1s

# biolatency -D: a histogram per disk (dev is the kernel's dev_t, major << 20 | minor).
step "biolatency -D" "bpftape latency -u bio.arrow issue complete --key dev,sector --by dev"
bpftape latency -u "$dir/bio.arrow" issue complete --key dev,sector --by dev

# The request sizes (bitesize), per second and per disk.
step "bitesize -T 1, per disk" "bpftape hist bio.arrow issue nr_sector --interval 1s --by dev"
bpftape hist "$dir/bio.arrow" issue nr_sector --interval 1s --by dev
