#!/bin/sh
# vmguest.sh: the guest side of `make vmbench` (bench/vmbench.sh boots it as
# /bin/guest.sh of scripts/vmtest's init). For each kernel-function row
# (kprobe, kretprobe, fentry, fexit on vfs_read) and each of ROUNDS rounds,
# it times `vmwork hold N /dev/zero` (N reads of 1-4096 bytes) bare, under
# the empty program (driver empty), under bpftrace's hist and under bpftape
# record, the order rotating each round, and prints one line a run:
#   VMBENCH kernel=K row=R round=I tool=T events=N loop_ns=X prog_ns=Y tool_cpu_ns=Z
# after a first line "VMBENCH kernel=K start n=N rounds=R cpus=C".
# X is the workload's own loop time, Y the BPF run time per run of the
# tool's busiest program (kernel.bpf_stats_enabled; "-" bare), read from
# the tool's fdinfo while the workload, done, still holds its pid, and
# tool_cpu_ns the tool's own CPU time over the loop (/proc/PID/stat, in
# clock ticks: 10 ms steps). Then
#   VMBENCH kernel=K done
# A tool that fails prints "VMBENCH kernel=K row=R round=I tool=T error=..."
PATH=/bin
export PATH
K=unknown
N=100000
ROUNDS=5
RUN_TIMEOUT=300
for a in $(cat /proc/cmdline); do
	case "$a" in
	vmbench.kernel=*) K=${a#vmbench.kernel=} ;;
	vmbench.n=*) N=${a#vmbench.n=} ;;
	vmbench.rounds=*) ROUNDS=${a#vmbench.rounds=} ;;
	esac
done
W=/tmp/vmbench
mkdir -p $W
cd $W || exit 1
echo 1 >/proc/sys/kernel/bpf_stats_enabled
# A write to a workload that a timeout killed fails instead of ending the script.
trap "" PIPE
# With more than one vCPU the workload runs on the last one and the tools
# where the scheduler puts them, as make bench's 1T rows run; with one,
# the recorder's own CPU comes out of the workload's, as in the 2T rows.
CPUS=$(nproc)
TICK=100 # USER_HZ, /proc/PID/stat's unit on x86 (busybox has no getconf)
PIN=""
[ "$CPUS" -le 1 ] || PIN="taskset -c $((CPUS - 1))"

# Each tool's probe for a row (P: the workload's pid).
empty_probe() { echo "$1:vfs_read"; }
bpftape_probe() {
	case $1 in
	k) echo 'k:vfs_read(arg2)' ;;
	kr) echo 'kr:vfs_read(retval)' ;;
	f) echo 'f:vfs_read(count)' ;;
	fr) echo 'fr:vfs_read(retval)' ;;
	esac
}
bpftrace_prog() { # KIND PID
	case $1 in
	k) echo "kprobe:vfs_read /pid == $2/ { @h = hist(arg2); }" ;;
	kr) echo "kretprobe:vfs_read /pid == $2/ { @h = hist(retval); }" ;;
	f) echo "kfunc:vfs_read /pid == $2/ { @h = hist(args->count); }" ;;
	fr) echo "kretfunc:vfs_read /pid == $2/ { @h = hist(retval); }" ;;
	esac
}

# wait_for FILE TEXT PID: until FILE holds TEXT (1 if PID exits first or
# after 300 s).
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		kill -0 "$3" 2>/dev/null || return 1
		i=$((i + 1))
		[ $i -lt 3000 ] || return 1
		sleep 0.1
	done
}

# cpu_ticks PID: the user and system CPU PID has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat 2>/dev/null || echo 0; }

# prog_ns PID: run_time_ns / run_cnt of PID's BPF program with the most runs.
prog_ns() {
	for f in /proc/$1/fdinfo/*; do cat "$f"; done 2>/dev/null | awk '
		$1 == "run_time_ns:" { t = $2 }
		$1 == "run_cnt:" && $2 > c { c = $2; best = t }
		END { if (c > 0) printf "%.1f", best / c; else print "-" }'
}

# run ROW KIND ROUND TOOL: one timed run of the workload under TOOL.
run() {
	row=$1 kind=$2 round=$3 tool=$4
	rm -f in out tool.out tool.err tool.pid ready cap.arrow
	mkfifo in out
	$PIN vmwork hold $N /dev/zero <in >out &
	P=$!
	exec 3>in 4<out
	T=""
	ok=1
	# A run that has not ended after RUN_TIMEOUT seconds is killed (one
	# bpftrace run once stopped the whole guest), and reported failed.
	rm -f hung
	(sleep $RUN_TIMEOUT && touch hung && kill -KILL $P $(cat tool.pid 2>/dev/null) 2>/dev/null) &
	wd=$!
	case $tool in
	empty)
		driver empty "$(empty_probe $kind)" >tool.out 2>tool.err &
		T=$!
		echo $T >tool.pid
		wait_for tool.out READY $T || ok=0
		;;
	bpftrace)
		__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 bpftrace -e "$(bpftrace_prog $kind $P)" >tool.out 2>tool.err &
		T=$!
		echo $T >tool.pid
		wait_for tool.err __BPFTRACE_NOTIFY_PROBES_ATTACHED $T || ok=0
		;;
	bpftape)
		bpftape record -o cap.arrow --ready-file ready -p $P "$(bpftape_probe $kind)" >tool.out 2>tool.err &
		T=$!
		echo $T >tool.pid
		wait_for ready setup_ms $T || ok=0
		;;
	esac
	if [ $ok = 1 ]; then
		c0=0
		[ -z "$T" ] || c0=$(cpu_ticks $T)
		echo >&3
		read -r line <&4
		pn=- cn=-
		[ -z "$T" ] || { pn=$(prog_ns $T); cn=$((($(cpu_ticks $T) - c0) * 1000000000 / TICK)); }
	fi
	echo >&3
	exec 3>&- 4<&-
	wait $P
	if [ -n "$T" ]; then
		[ $tool = bpftape ] || kill -INT $T 2>/dev/null
		wait $T
	fi
	kill $wd 2>/dev/null
	wait $wd 2>/dev/null
	rm -f tool.pid
	[ ! -e hung ] || ok=0
	if [ -e hung ]; then
		echo "VMBENCH kernel=$K row=$row round=$round tool=$tool error=killed-after-${RUN_TIMEOUT}s;$(tail -n 3 tool.err | tr ' \n' ',;')"
	elif [ $ok = 1 ] && [ -n "$line" ]; then
		set -- $line
		echo "VMBENCH kernel=$K row=$row round=$round tool=$tool events=$2 loop_ns=$4 prog_ns=$pn tool_cpu_ns=$cn"
	else
		echo "VMBENCH kernel=$K row=$row round=$round tool=$tool error=$(tail -n 3 tool.err | tr ' \n' ',;')"
	fi
}

echo "VMBENCH kernel=$K start n=$N rounds=$ROUNDS cpus=$CPUS"
for pair in kprobe:k kretprobe:kr fentry:f fexit:fr; do
	row=${pair%%:*}
	kind=${pair#*:}
	r=1
	while [ $r -le "$ROUNDS" ]; do
		# The order rotates each round.
		set -- bare empty bpftrace bpftape
		i=1
		while [ $i -lt $r ]; do
			x=$1
			shift
			set -- "$@" "$x"
			i=$((i + 1))
		done
		for tool in "$@"; do
			run $row $kind $r $tool
		done
		r=$((r + 1))
	done
done
echo "VMBENCH kernel=$K done"
