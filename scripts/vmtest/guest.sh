#!/bin/sh
# guest.sh: the checks `make vmtest` runs as root inside each guest (busybox
# sh, from the initramfs that run.sh builds). It prints one line per check
# on the console:
#   VMTEST kernel=K check=C result=PASS|FAIL|SKIP detail=...
# and "VMTEST kernel=K done" at the end. The kernel's name and expectation
# come from the kernel command line (vmtest.kernel=, vmtest.expect=), set
# by run.sh from ./kernels. Every expected count is the workload's own
# printed truth, or the count it was told to produce.
#
# Each block of checks is named by its first result ("if runs NAME").
# arm64 guests run every block; x86-64 guests all but the arm64 ones
# (ARM64_ONLY). vmtest.checks=A,B,... (run.sh's VMTEST_CHECKS) runs only
# those, in any guest. Every result is followed by a VMTEST-T line with the
# guest's uptime, for the checks' wall times.
PATH=/bin
export PATH
K=unknown
EXPECT=record
CHECKS=""
REC_TIMEOUT=120
for a in $(cat /proc/cmdline); do
	case "$a" in
	vmtest.kernel=*) K=${a#vmtest.kernel=} ;;
	vmtest.expect=*) EXPECT=${a#vmtest.expect=} ;;
	vmtest.checks=*) CHECKS=$(echo "${a#vmtest.checks=}" | tr ',' ' ') ;;
	vmtest.rec_timeout=*) REC_TIMEOUT=${a#vmtest.rec_timeout=} ;;
	esac
done
ARCH=$(uname -m)
# The arm64 guests' own blocks: arguments by the AAPCS64 (abi), USDT in
# every arm64 operand form (usdt-torture), and the capture that run.sh
# reads back on the x86-64 host (xarch).
ARM64_ONLY="abi usdt-torture xarch"
runs() { # NAME: whether this guest runs the check (block) NAME
	if [ -n "$CHECKS" ]; then
		case " $CHECKS " in *" $1 "*) return 0 ;; esac
		return 1
	fi
	[ "$ARCH" = aarch64 ] && return 0
	case " $ARM64_ONLY " in *" $1 "*) return 1 ;; esac
	return 0
}
# The kernel's syscall entry, which every kernel stack taken in a syscall
# holds.
case "$ARCH" in
aarch64) SYSCALL_ENTRY=invoke_syscall ;;
*) SYSCALL_ENTRY=do_syscall_64 ;;
esac

# Event counts, chosen for TCG speed (a uprobe trap costs tens of µs there).
N_BURST=2000  # uprobe + uretprobe on tick
N_SEM=500     # USDT test:guarded
N_OPEN=200    # sys_enter_openat with a string
N_WRITES=300  # sys_exit_write
N_LOSS=20000  # uprobe into a one-page ring
N_READ=1000   # kprobe + kretprobe, fentry + fexit on vfs_read
N_TCP=300     # tcp_sendmsg over loopback
# fentry and fexit read arguments with bpf_get_func_arg (5.17); on arm64
# their trampolines attach to kernel functions through ftrace's direct
# calls (6.4): older kernels must refuse them (FENTRY_NEEDS: what the
# refusal names, with the kprobe to use instead).
rel=$(uname -r)
maj=${rel%%.*}
min=${rel#*.}
min=${min%%.*}
HAVE_FENTRY=1
FENTRY_NEEDS=bpf_get_func_arg
if [ "$maj" -lt 5 ] || { [ "$maj" = 5 ] && [ "$min" -lt 17 ]; }; then HAVE_FENTRY=""; fi
if [ "$ARCH" = aarch64 ] && { [ "$maj" -lt 6 ] || { [ "$maj" = 6 ] && [ "$min" -lt 4 ]; }; }; then
	HAVE_FENTRY=""
	FENTRY_NEEDS=""
fi
N_COST=50000  # reads per overhead round (k: against f:), 5 rounds
K_COMM=100    # per comm phase
RT_ROUNDS=100 # renames per RT thread
RT_PER=10     # firings per name

# On the PREEMPT_RT kernel, the console shows informational messages too:
# the task that holds up an RCU-tasks grace period (run.sh asks the kernel
# to report one after 30 s) and sysrq's blocked tasks print at that level.
case "$rel" in *-rt-*) echo 7 >/proc/sys/kernel/printk ;; esac

# Every recording prints its programs' verifier statistics (see rec).
BPFTAPE_VERIFIER_STATS=1
export BPFTAPE_VERIFIER_STATS
W=/tmp/vmtest
mkdir -p $W
cd $W || exit 1
fails=0

result() { # CHECK PASS|FAIL|SKIP DETAIL
	echo "VMTEST kernel=$K check=$1 result=$2 detail=$(echo "$3" | tr ' \n' ',;')"
	echo "VMTEST-T kernel=$K check=$1 uptime=$(cut -d' ' -f1 /proc/uptime)"
	[ "$2" != FAIL ] || fails=$((fails + 1))
}

# jnum KEY FILE: the first integer value of "KEY": in FILE (JSON).
jnum() { grep -o "\"$1\":-\?[0-9]*" "$2" | head -n 1 | sed 's/.*://'; }

# jprobe PROBE FILE: PROBE's event count in info --json's events_per_probe.
jprobe() { grep -o '"events_per_probe":{[^}]*}' "$2" | grep -o "\"$1\":[0-9]*" | sed 's/.*://'; }

# rec NAME ARGS...: bpftape record -o NAME.arrow ARGS..., stderr in NAME.err,
# the workload's stdout (the truth) in NAME.out, info --json in NAME.json.
# A recording that has not ended after REC_TIMEOUT seconds (120, or
# vmtest.rec_timeout=: run.sh's VMTEST_REC_TIMEOUT) is diagnosed (see hung)
# and killed, so that one hang costs one check, not the guest.
rec() {
	n=$1
	shift
	bpftape record -o $n.arrow --force "$@" >$n.out 2>$n.err &
	rp=$!
	# One sleep, not a polling loop: periodic wake-ups could hide a hang
	# that only an idle guest shows.
	(sleep $REC_TIMEOUT && kill -0 $rp 2>/dev/null && hung $n $rp) &
	wp=$!
	wait $rp
	st=$?
	kill $wp 2>/dev/null
	# How close each program came to the verifier's limit of a million
	# instructions on this kernel (BPFTAPE_VERIFIER_STATS, below).
	grep -h '^bpftape: verifier: ' $n.err | sed "s/^bpftape: verifier: /VMTEST-VERIFIER kernel=$K rec=$n /" | cut -c1-160
	bpftape info --json $n.arrow >$n.json 2>>$n.err
	return $st
}

# hung NAME PID: print on the console where recording NAME is stuck: the
# kernel stacks of its threads and its children's, the blocked tasks
# (sysrq w), the Go goroutines (SIGQUIT), then kill it.
hung() {
	echo "VMTEST-HANG kernel=$K rec=$1 pid=$2 after ${REC_TIMEOUT}s: $(tr '\0' ' ' </proc/$2/cmdline | cut -c1-200)"
	for p in $2 $(cat /proc/$2/task/*/children 2>/dev/null); do
		for t in /proc/$p/task/*; do
			echo "VMTEST-HANG task $t $(cut -d' ' -f3 $t/stat 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null)"
			sed 's/^/VMTEST-HANG   /' $t/stack 2>/dev/null | head -n 16
		done
	done
	echo 1 >/proc/sys/kernel/sysrq 2>/dev/null && echo w >/proc/sysrq-trigger 2>/dev/null
	kill -QUIT $2 2>/dev/null
	sleep 3
	grep -A3 '^goroutine ' $1.err 2>/dev/null | head -n 120 | sed 's/^/VMTEST-HANG go /'
	kill -9 $2 2>/dev/null
}

# tail of a failed step's stderr, for the detail field.
errtail() { tail -n 3 "$1" | sed 's/[^ -~]/?/g' | cut -c1-200; }

# doctor: the feature report, when this bpftape has it; its verdict is
# printed on the console (VMTEST-DOCTOR lines) for the log.
if runs doctor; then
	if bpftape doctor --help >/dev/null 2>&1; then
		if bpftape doctor --json >doctor.json 2>doctor.err && grep -q '^{' doctor.json; then
			# Its verdict must agree with this kernel's expectation, and it
			# must say it uses every probe kind the checks below record.
			doc=$(tr -d ' \n' <doctor.json)
			cr=$(echo "$doc" | grep -o '"can_record":[a-z]*' | sed 's/.*://')
			want=false
			[ "$EXPECT" != record ] || want=true
			bad=""
			[ "$cr" = "$want" ] || bad="can_record=$cr,want=$want"
			# The architecture: uname's machine, and the build's
			# registers, which the text form spells out.
			goarch=amd64
			[ "$ARCH" != aarch64 ] || goarch=arm64
			m=$(echo "$doc" | grep -o '"machine":"[^"]*"' | sed 's/.*:"//; s/"$//')
			ga=$(echo "$doc" | grep -o '"arch":"[^"]*"' | sed 's/.*:"//; s/"$//')
			[ "$m" = "$ARCH" ] && [ "$ga" = "$goarch" ] || bad="$bad,machine=$m,arch=$ga,want=$ARCH,$goarch"
			case "$goarch" in
			arm64) regs="AAPCS64: arg0..arg7 in x0..x7, retval in x0; user stacks by frame pointers (x29)" ;;
			*) regs="System V AMD64: arg0..arg5 in rdi..r9, retval in rax; user stacks by frame pointers (rbp)" ;;
			esac
			bpftape doctor 2>/dev/null | grep -qF "architecture $goarch ($ARCH), $regs" || bad="$bad,no-architecture-line"
			for kind in uprobe uretprobe usdt usdt_semaphore tracepoint; do
				a=$(echo "$doc" | grep -o "\"kind\":\"$kind\",\"spec\":\"[^\"]*\",\"kernel\":[a-z]*,\"action\":\"[a-z]*\"" | sed 's/.*"action":"//; s/"$//')
				[ "$want" = false ] || [ "$a" = use ] || bad="$bad,$kind=$a"
			done
			# Debian's kernels have kprobes (whether bpftape records them or not).
			kp=$(echo "$doc" | grep -o '"kind":"kprobe","spec":"[^"]*","kernel":[a-z]*' | sed 's/.*://')
			[ "$kp" = true ] || bad="$bad,kprobe-kernel=$kp"
			ck=$(echo "$doc" | grep -o '"subject":"attach_cookies","action":"[a-z]*"' | sed 's/.*"action":"//; s/"$//')
			if [ -z "$bad" ]; then
				result doctor PASS "can_record=$cr,attach_cookies=$ck,arch=$ga"
			else
				result doctor FAIL "$bad"
			fi
			bpftape doctor 2>&1 | sed "s/^/VMTEST-DOCTOR kernel=$K /"
		else
			result doctor FAIL "$(errtail doctor.err)"
		fi
	else
		result doctor SKIP "no-doctor-verb-in-this-bpftape"
	fi
fi

case "$EXPECT" in
refuse:*)
	want=${EXPECT#refuse:}
	if rec refuse -c "probes burst 10" 'u:/bin/probes:tick(arg0)'; then
		result refuse FAIL "recorded,expected-refusal-with-$want"
	elif grep -q "$want" refuse.err; then
		result refuse PASS "$(grep -m1 "$want" refuse.err | cut -c1-160)"
	else
		result refuse FAIL "$(errtail refuse.err)"
	fi
	echo "VMTEST kernel=$K done fails=$fails"
	exit 0
	;;
esac

# uprobe, uretprobe and the capture window: one u:/ur: pair on tick. The
# workload prints the sum of tick's return values, 2*arg for arg 1..N:
# the arguments add up to half of it, the return values to all of it.
if runs uprobe; then
	if rec pair -c "probes burst $N_BURST" 'u:/bin/probes:tick(arg0)' 'ur:/bin/probes:tick'; then
		u=$(jprobe tick pair.json)
		r=$(jprobe tick:return pair.json)
		truth=$(awk '$1=="burst"{print $2}' pair.out)
		psum=$(awk '$1=="burst"{print $4}' pair.out)
		asum=$(bpftape events --time none pair.arrow tick | awk -F'arg0=' 'NF>1{s+=$2}END{print s+0}')
		[ "$u" = "$N_BURST" ] && [ "$truth" = "$N_BURST" ] && [ "$((2 * asum))" = "$psum" ] && result uprobe PASS "events=$u/$truth,arg0-sum=$asum,printed=$psum" ||
			result uprobe FAIL "events=$u/$truth,arg0-sum=$asum,printed=$psum"
		# every return value is 2*arg: the sum over 1..N is N(N+1).
		sum=$(bpftape events --time none pair.arrow 'tick:return' | awk -F'retval=' 'NF>1{s+=$2}END{print s+0}')
		[ "$r" = "$N_BURST" ] && [ "$sum" = "$((N_BURST * (N_BURST + 1)))" ] && [ "$sum" = "$psum" ] && result uretprobe PASS "events=$r,sum=$sum" || result uretprobe FAIL "events=$r,sum=$sum,printed=$psum"
		ws=$(jnum start_ns pair.json)
		we=$(jnum end_ns pair.json)
		fe=$(jnum first_event_ns pair.json)
		le=$(jnum last_event_ns pair.json)
		if [ -n "$ws" ] && [ -n "$we" ] && [ "$ws" -le "$fe" ] && [ "$le" -le "$we" ] && [ "$u" = "$r" ]; then
			result window PASS "window=$(((we - ws) / 1000000))ms,u=$u,ur=$r"
		else
			result window FAIL "start=$ws,end=$we,first=$fe,last=$le,u=$u,ur=$r"
		fi
	else
		# The first recording: when it fails, the whole error (a verifier
		# log ends with the instruction it refused) goes to the console log.
		tail -n 60 pair.err | sed 's/^/VMTEST-ERR /'
		for c in uprobe uretprobe window; do result $c FAIL "$(errtail pair.err)"; done
	fi
fi

# USDT with a semaphore: test:guarded fires only while the semaphore is set.
if runs usdt-sem; then
	if rec sem -c "probes sem $N_SEM" 'U:/bin/probes:test:guarded'; then
		e=$(jprobe guarded sem.json)
		seen=$(awk '$1=="sem"{print $3}' sem.out)
		[ "$e" = "$N_SEM" ] && [ "$seen" = "$N_SEM" ] && result usdt-sem PASS "events=$e,seen=$seen" || result usdt-sem FAIL "events=$e,seen=$seen"
	else
		result usdt-sem FAIL "$(errtail sem.err)"
	fi
fi

# USDT in a shared library (with a semaphore): a dynamic workload, with its
# loader and libc copied from the host.
if runs usdt-shlib; then
	if [ -x /bin/usdtlib ]; then
		if rec shlib -c "usdtlib $N_SEM" "U:/lib/vmtest/libvmusdt.so:vmtest:lib"; then
			e=$(jprobe lib shlib.json)
			seen=$(awk '$1=="lib"{print $3}' shlib.out)
			[ "$e" = "$N_SEM" ] && [ "$seen" = "$N_SEM" ] && result usdt-shlib PASS "events=$e,seen=$seen" || result usdt-shlib FAIL "events=$e,seen=$seen"
		else
			result usdt-shlib FAIL "$(errtail shlib.err)"
		fi
	else
		result usdt-shlib SKIP "no-shared-library-workload-in-initramfs"
	fi
fi

# USDT in every operand form the compilers emit, with semaphores and in a
# shared library: testdata/usdt-torture's guestcheck.sh records the
# torture workload and compares every value with its printed truth. run.sh
# builds it (for arm64 guests, when the tree has the check) into
# /torture/VARIANT/: gcc -O2 linked with libtorture.so (registers,
# [xN, OFF]; the library's probes), gcc -O0 static ([sp, OFF]) and
# clang -O2 static ([xN]).
if runs usdt-torture; then
	if [ -e /torture/guestcheck.sh ]; then
		ok=PASS
		detail=""
		for d in /torture/*/; do
			v=$(basename "$d")
			set -- "$d/torture"
			[ ! -e "$d/libtorture.so" ] || set -- "$@" "$d/libtorture.so"
			sh /torture/guestcheck.sh /bin/bpftape "$@" >torture-$v.txt 2>torture-$v.err
			st=$?
			if [ $st != 0 ]; then
				ok=FAIL
				tail -n 30 torture-$v.err | sed "s/^/VMTEST-TORTURE $v /"
			fi
			detail="$detail${detail:+;}$v:$(tail -n 1 torture-$v.txt | cut -c1-160)"
		done
		result usdt-torture $ok "$detail"
	else
		result usdt-torture SKIP "no-testdata/usdt-torture/guestcheck.sh-in-this-tree"
	fi
fi

# Arguments and return values where the AAPCS64 puts them (testdata/abi's
# README): x registers, the stack, register pairs, structs by value and by
# reference, named by their DWARF names; every value is the one the
# workload prints. What no probe can read (a v register, a result returned
# through x8's memory) is refused, saying where it is.
if runs abi; then
	if [ -x /bin/abiwork ]; then
		a=$W/abiwork
		cp /bin/abiwork $a
		if rec abi -c "$a" "u:$a:f10(a,h,i,j)" "u:$a:pass16(s.a,s.b,b)" "u:$a:after7(g,s.a,s.b,h)" \
			"u:$a:pass_big(a,s.a,s.c,b)" "u:$a:big_stack(h,s.b,i)" "u:$a:floats(a,c,e)" "u:$a:pass_q16(a,b)" \
			"u:$a:mix(arg7,i,j,k)" "ur:$a:ret16(retval.a,retval.b)" "ur:$a:ret_int"; then
			bad=""
			n=0
			while read -r p want; do
				got=$(bpftape events --time none abi.arrow "$p" </dev/null 2>>abi.err | awk 'NR>1{s=""; for (k=1; k<=NF; k++) if ($k ~ /=/) {v=$k; sub(/^[^=]*=/, "", v); s=s (s==""?"":" ") v} print s}')
				n=$((n + 1))
				[ "$got" = "$want" ] || bad="$bad,$p=[$got]-want-[$want]"
			done <<-EOF
			f10 10 80 90 100
			pass16 10 11 20
			after7 70 80 81 90
			pass_big 10 20 22 30
			big_stack 80 91 100
			floats 10 30 50
			pass_q16 10 30
			mix 80 90 100 110
			ret16:return 10 11
			ret_int:return 10
			EOF
			# The refusals, each with the register it names.
			for r in "u:$a:floats(b) v0" "ur:$a:ret24(retval.a) x8"; do
				spec=${r% *}
				reg=${r##* }
				if bpftape record -o abi-r.arrow --force -c "$a" "$spec" >abi-r.out 2>abi-r.err; then
					bad="$bad,recorded-$spec:$(bpftape events --time none abi-r.arrow 2>&1 | sed -n 2p | cut -c1-80)"
				elif ! grep -q "$reg" abi-r.err; then
					bad="$bad,$spec-refused-without-$reg:$(errtail abi-r.err)"
				fi
			done
			# A function returning a double: its return event is
			# recorded, with a warning that retval is x0, not the value.
			if ! bpftape record -o abi-r.arrow --force -c "$a" "ur:$a:ret_double" >abi-r.out 2>abi-r.err; then
				bad="$bad,ret_double-not-recorded:$(errtail abi-r.err)"
			elif ! grep -q "retval is the integer return register.*in v0" abi-r.err; then
				bad="$bad,ret_double-without-v0-warning:$(errtail abi-r.err)"
			fi
			[ -z "$bad" ] && result abi PASS "$n-probes-as-printed,2-refused,1-warned" || result abi FAIL "${bad#,}"
		else
			result abi FAIL "$(errtail abi.err)"
		fi
	else
		result abi SKIP "no-testdata/abi-in-this-tree"
	fi
fi

# Tracepoints: a string field (openat's filename) and sys_exit_write.
if runs tp-string; then
	f=$W/open-marker
	if rec open -c "vmwork open $N_OPEN $f" 't:syscalls:sys_enter_openat(str(filename))'; then
		e=$(bpftape events --time none open.arrow | grep -c "filename=\"$f\"")
		truth=$(awk '$1=="open"{print $2}' open.out)
		[ "$e" = "$N_OPEN" ] && [ "$truth" = "$N_OPEN" ] && result tp-string PASS "events=$e/$truth" || result tp-string FAIL "events=$e/$truth"
	else
		result tp-string FAIL "$(errtail open.err)"
	fi
fi
if runs tp-count; then
	if rec writes -c "probes writes $N_WRITES" 't:syscalls:sys_exit_write(ret)'; then
		e=$(jprobe sys_exit_write writes.json)
		lines=$(grep -c '^write ' writes.out)
		bytes=$(wc -c <writes.out)
		sum=$(bpftape events --time none writes.arrow | awk -F'ret=' 'NF>1{s+=$2}END{print s+0}')
		[ "$e" = "$N_WRITES" ] && [ "$lines" = "$N_WRITES" ] && [ "$sum" = "$bytes" ] && result tp-count PASS "events=$e,bytes=$sum" || result tp-count FAIL "events=$e,lines=$lines,ret-sum=$sum,bytes=$bytes"
	else
		result tp-count FAIL "$(errtail writes.err)"
	fi
fi

# Loss accounting: a one-page ring, and a reader that cannot drain it: the
# recorder (system-wide uprobes on /bin/probes) is stopped while the
# workload fires N_LOSS times, so some firings must be lost (with two
# vCPUs a running reader kept up), and every firing is an event or a loss.
if runs loss; then
	rm -f loss.arrow loss.ready
	bpftape record -o loss.arrow --force --ready-file loss.ready --ringbuf-size 4096 'u:/bin/probes:tick(arg0)' >loss.out 2>loss.err &
	rp=$!
	i=0
	while [ ! -e loss.ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	kill -STOP $rp
	probes burst $N_LOSS >/dev/null
	kill -CONT $rp
	kill -INT $rp
	if wait $rp && bpftape info --json loss.arrow >loss.json 2>>loss.err; then
		e=$(jprobe tick loss.json)
		l=$(grep -o '"losses":{"total":[0-9]*' loss.json | sed 's/.*://')
		[ -n "$e" ] && [ -n "$l" ] && [ "$l" -gt 0 ] && [ $((e + l)) = "$N_LOSS" ] && result loss PASS "events=$e,lost=$l,sum=$N_LOSS" || result loss FAIL "events=$e,lost=$l,want-sum=$N_LOSS"
	else
		result loss FAIL "$(errtail loss.err)"
	fi
fi

# comm across prctl and exec: each phase's events carry the name the
# workload read back at that moment.
if runs comm; then
	if rec comm -c "vmwork comm $K_COMM /bin/vmt-exec" 'u:/bin/vmwork:mark(arg0)'; then
		bpftape events --time none comm.arrow | awk 'NR>1{sub("arg0=","",$5); print $5, $3}' | sort | uniq -c | awk '{print $2, $3, $1}' >comm.got
		awk '$1=="comm"{print $2, $3, $4}' comm.out | sort >comm.want
		if [ "$(wc -l <comm.want)" = 3 ] && cmp -s comm.got comm.want; then
			result comm PASS "$(cat comm.got)"
		else
			result comm FAIL "got=$(cat comm.got),want=$(cat comm.want)"
		fi
	else
		result comm FAIL "$(errtail comm.err)"
	fi
fi

# PREEMPT_RT (two vCPUs): two threads rename themselves round by round;
# every event's comm must be its thread's name at that round.
if runs rt-comm; then
	if [ "$(grep -c ^processor /proc/cpuinfo)" -ge 2 ]; then
		if rec rt -c "vmwork rt $RT_ROUNDS $RT_PER" 'u:/bin/vmwork:mark(arg0)'; then
			# CSV: time,cpu,pid,tid,comm,probe,mark.arg0
			bpftape export --format csv -o rt.csv rt.arrow 2>>rt.err
			awk -F, 'NR>1{print $7, $5}' rt.csv | sort | uniq -c | awk '{print $2, $3, $1}' >rt.got
			awk '$1=="rt"{print $2, $3, $4}' rt.out | sort >rt.want
			cpus=$(awk -F, 'NR>1{print $2}' rt.csv | sort -u | wc -l)
			tids=$(awk -F, 'NR>1{print $4}' rt.csv | sort -u | wc -l)
			if [ "$(wc -l <rt.want)" = $((2 * RT_ROUNDS)) ] && cmp -s rt.got rt.want && [ "$tids" = 2 ]; then
				result rt-comm PASS "$(wc -l <rt.got)names,$((2 * RT_ROUNDS * RT_PER))events,threads=$tids,cpus=$cpus,$(uname -v | grep -o PREEMPT_RT)"
			else
				result rt-comm FAIL "threads=$tids,diff=$(diff rt.want rt.got | grep '^[-+][^-+]' | head -n 5)"
			fi
		else
			result rt-comm FAIL "$(errtail rt.err)"
		fi
	else
		result rt-comm SKIP "one-vCPU"
	fi
fi

# SIGKILL recovery: kill -9 the recorder; info reads the footerless file,
# repair writes a standard one with the same events.
if runs sigkill; then
	rm -f kill.arrow kill.ready fixed.arrow
	bpftape record -o kill.arrow --ready-file kill.ready -c "probes spin 8" 'u:/bin/probes:tick' >kill.out 2>kill.err &
	rp=$!
	i=0
	while [ ! -e kill.ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 4
	kill -9 $rp
	wait $rp 2>/dev/null
	if bpftape info --json kill.arrow >kill.json 2>>kill.err && grep -q '"recovered":true' kill.json &&
		bpftape repair kill.arrow fixed.arrow 2>>kill.err && bpftape info --json fixed.arrow >fixed.json 2>>kill.err &&
		grep -q '"recovered":false' fixed.json && [ "$(jnum events kill.json)" -gt 0 ] &&
		[ "$(jnum events kill.json)" = "$(jnum events fixed.json)" ]; then
		result sigkill PASS "events=$(jnum events kill.json),batches=$(jnum batches kill.json)"
	else
		result sigkill FAIL "$(errtail kill.err)"
	fi
fi

# kprobe and kretprobe on vfs_read: N reads of /dev/zero of known sizes by
# the -c command. The command starts as bpftape's gate, whose read of one
# byte returns once recording started: only events under the workload's
# own comm count. arg2 (count) and retval each add up to the bytes read.
if runs kprobe; then
	if rec kread -c "vmwork read $N_READ /dev/zero" 'kin=k:vfs_read(arg2)' 'kout=kr:vfs_read'; then
		truth=$(awk '$1=="read"{print $3}' kread.out)
		kin=$(bpftape events --time none --comm vmwork kread.arrow kin | awk -F'arg2=' 'NF>1{n++;s+=$2}END{print n+0":"s+0}')
		kout=$(bpftape events --time none --comm vmwork kread.arrow kout | awk -F'retval=' 'NF>1{n++;s+=$2}END{print n+0":"s+0}')
		[ "$kin" = "$N_READ:$truth" ] && result kprobe PASS "events:sum=$kin,truth=$N_READ:$truth" || result kprobe FAIL "events:sum=$kin,truth=$N_READ:$truth"
		if [ "$kin" != "$N_READ:$truth" ] || [ "$kout" != "$N_READ:$truth" ]; then
			# Where the missing events went: counts by comm and probe, the
			# first events of the recording, and its loss counters.
			bpftape events --time none kread.arrow | awk 'NR>1{print $3, $4}' | sort | uniq -c | sed 's/^/VMTEST-DIAG kread by comm: /'
			bpftape events --time rel kread.arrow | awk 'NR<=4 || $4!=c {print NR": "$0} {c=$4}' | head -n 40 | sed 's/^/VMTEST-DIAG kread: /'
			bpftape info kread.arrow | grep -i 'lost\|events' | sed 's/^/VMTEST-DIAG kread info: /'
		fi
		[ "$kout" = "$N_READ:$truth" ] && result kretprobe PASS "events:sum=$kout" || result kretprobe FAIL "events:sum=$kout,truth=$N_READ:$truth"
	else
		result kprobe FAIL "$(errtail kread.err)"
	fi
fi

# Latency from entry/return pairs: every kprobe entry of the workload pairs
# with its return (bpftape latency: calls N, nothing unmatched).
pairs() { # FILE ENTRY RETURN: "calls:unmatched-returns:unmatched-entries" of the workload's events
	bpftape latency --json --comm vmwork "$1" "$2" "$3" >pairs.json 2>>pairs.err || { echo error; return; }
	echo "$(jnum calls pairs.json):$(jnum unmatched_returns pairs.json):$(jnum unmatched_entries pairs.json)"
}
if [ -e kread.arrow ] && runs k-latency; then
	lat=$(pairs kread.arrow kin kout)
	[ "$lat" = "$N_READ:0:0" ] && result k-latency PASS "calls:unmatched=$lat" || result k-latency FAIL "calls:unmatched=$lat,want=$N_READ:0:0"
fi

# str() of a kernel function's char *: do_sys_openat2's filename points
# into user memory; the program picks the helper by address.
if runs k-string; then
	f=$W/kopen-marker
	if rec kopen -c "vmwork open $N_OPEN $f" 'k:do_sys_openat2(str(arg1))'; then
		e=$(bpftape events --time none --comm vmwork kopen.arrow | grep -c "arg1=\"$f\"")
		[ "$e" = "$N_OPEN" ] && result k-string PASS "events=$e/$N_OPEN" || result k-string FAIL "events=$e/$N_OPEN"
	else
		result k-string FAIL "$(errtail kopen.err)"
	fi
fi

# A pointer chain through BTF and a filter in the kernel: the name of the
# file each vfs_read reads (biosnoop's and opensnoop's way to a name), and
# only the reads of at least 1 byte, which are all of the workload's. kp's
# filter compares a pointer chain's value: two filtered kprobes with
# chains in one program, within 6.1's verifier limit.
if runs k-expr; then
	if rec kexpr -c "vmwork read $N_READ /dev/zero" 'kx=k:vfs_read(count, str(file->f_path.dentry->d_name.name))/count > 0 && comm == "vmwork"/' \
		'kp=k:vfs_read(file->f_pos)/file->f_pos >= 0 && comm == "vmwork"/'; then
		e=$(bpftape events --time none kexpr.arrow kx | grep -c 'file->f_path.dentry->d_name.name="zero"')
		all=$(bpftape count kexpr.arrow kx | awk '$1=="kx"{print $2}')
		other=$((all - $(bpftape count --comm vmwork kexpr.arrow kx | awk '$1=="kx"{print $2}')))
		filt=$(bpftape info kexpr.arrow | grep -c 'filter count > 0 && comm == "vmwork"')
		kp=$(bpftape count kexpr.arrow kp | awk '$1=="kp"{print $2}')
		[ "$e" = "$N_READ" ] && [ "$other" = 0 ] && [ "$filt" = 1 ] && [ "$kp" = "$N_READ" ] && result k-expr PASS "zero=$e/$N_READ,kp=$kp" ||
			result k-expr FAIL "zero=$e/$N_READ,other=$other,filter-in-info=$filt,kp=$kp"
	else
		# A refused program: the verifier log's end says why (the
		# error holds it on one line, with \n for its newlines).
		tail -c 2000 kexpr.err | awk '{gsub(/\\n/, "\n"); print}' | tail -n 12 | cut -c1-240 | sed "s/^/VMTEST-ERR kernel=$K k-expr /"
		result k-expr FAIL "$(errtail kexpr.err)"
	fi
fi

# A wildcard: k:vfs_rea* attaches one kprobe per matching function (vfs_read,
# vfs_readv...), each its own probe; count is funccount's table.
if runs k-wildcard; then
	if rec kwild -c "vmwork read $N_READ /dev/zero" 'k:vfs_rea*'; then
		n=$(grep -o '"kind":"kprobe"' kwild.json | wc -l)
		c=$(bpftape count --comm vmwork kwild.arrow 'vfs_read' | awk '$1=="vfs_read"{print $2}')
		[ "$n" -ge 2 ] && [ "$c" = "$N_READ" ] && result k-wildcard PASS "probes=$n,vfs_read=$c" || result k-wildcard FAIL "probes=$n,vfs_read=$c,want=$N_READ"
	else
		result k-wildcard FAIL "$(errtail kwild.err)"
	fi
fi

# k:vfs_* with one kprobe_multi link (where the kernel has them) and with a
# link per function (BPFTAPE_NO_KPROBE_MULTI=1): the same counts, and the
# recorder's setup time of each. The ready file says how many kprobe_multi
# links each used: none for the first; one where doctor says the kernel has
# them, else none, for the second.
if runs k-multi; then
	kvfs() { # ENV...: "probes:vfs_read-count:setup_ms:multi-links" of a recording of k:vfs_*
		rm -f kvfs.ready
		env "$@" bpftape record -o kvfs.arrow --force --ready-file kvfs.ready -c "vmwork read 100 /dev/zero" 'k:vfs_*' >kvfs.out 2>kvfs.err || { echo "error"; return; }
		bpftape info --json kvfs.arrow >kvfs.json
		echo "$(grep -o '"kind":"kprobe"' kvfs.json | wc -l):$(bpftape count --comm vmwork kvfs.arrow vfs_read | awk '$1=="vfs_read"{print $2}'):$(sed -n 's/^setup_ms=//p' kvfs.ready):$(sed -n 's/^kprobe_multi_links=//p' kvfs.ready)"
	}
	one=$(kvfs BPFTAPE_NO_KPROBE_MULTI=1)
	multi=$(kvfs BPFTAPE_NO_KPROBE_MULTI=0)
	# doctor.json (above): "use" where this kernel has kprobe_multi links.
	want_links=0
	tr -d ' \n' <doctor.json 2>/dev/null | grep -q '"subject":"kprobe_multi","action":"use"' && want_links=1
	case "$one,$multi" in
	*error*) result k-multi FAIL "link-each=$one,multi=$multi;$(errtail kvfs.err)" ;;
	*) if [ "$(echo "$one" | cut -d: -f1-2)" = "$(echo "$multi" | cut -d: -f1-2)" ] && [ "$(echo "$one" | cut -d: -f2)" = 100 ] &&
		[ "$(echo "$one" | cut -d: -f4)" = 0 ] && [ "$(echo "$multi" | cut -d: -f4)" = "$want_links" ]; then
		result k-multi PASS "probes:vfs_read:setup_ms:links,link-each=$one,kprobe_multi=$multi"
	else
		result k-multi FAIL "link-each=$one,multi=$multi,want-links=$want_links"
	fi ;;
	esac
fi

# Many short processes under -c: a shell starts 30 workloads one after
# another; every one is followed, and each of its 10 reads carries its own
# pid and comm (comm records keep up with the processes).
if runs k-procs; then
	if rec kprocs -c "sh -c 'i=0; while [ \$i -lt 30 ]; do vmwork read 10 /dev/zero >/dev/null; i=\$((i + 1)); done'" 'k:vfs_read(arg2)'; then
		got=$(bpftape count --by pid --comm vmwork kprocs.arrow | awk 'NR>1{n++; s+=$3; if ($3 != 10) bad++} END{print n+0":"s+0":"bad+0}')
		[ "$got" = "30:300:0" ] && result k-procs PASS "processes:events:bad=$got" || result k-procs FAIL "processes:events:bad=$got,want=30:300:0"
	else
		result k-procs FAIL "$(errtail kprocs.err)"
	fi
fi

# A mistyped (or inlined) function is refused before anything attaches,
# with the close names.
if runs k-error; then
	if rec ktypo -c "vmwork read 10 /dev/zero" 'k:vfs_raed'; then
		result k-error FAIL "recorded-k:vfs_raed"
	elif grep -q 'the kernel has no function vfs_raed' ktypo.err && grep -q '"vfs_read"' ktypo.err; then
		result k-error PASS "$(grep -o 'has no function[^(]*' ktypo.err | head -n 1)"
	else
		result k-error FAIL "$(errtail ktypo.err)"
	fi
fi

# list: the traceable kernel functions of a pattern, with BTF declarations.
if runs k-list; then
	if bpftape list 'k:vfs_rea*' >klist.txt 2>klist.err && grep -q '^k:vfs_read  *# ssize_t vfs_read(struct file \*file, char \*buf, size_t count, loff_t \*pos)$' klist.txt &&
		bpftape list -v f:vfs_read >flist.txt 2>>klist.err && grep -q '^f:vfs_read(file,buf,count,pos) ' flist.txt && grep -q 'arg2: count (size_t)' flist.txt; then
		result k-list PASS "$(wc -l <klist.txt)-functions"
	else
		result k-list FAIL "$(head -c 300 klist.txt flist.txt | tr -s ' ');$(errtail klist.err)"
	fi
fi

# A module's function: the loop module's loop_queue_rq (run.sh appends
# this kernel's loop.ko to the initramfs), by kprobe and, where fentry
# works, by fentry through the module's BTF, system-wide while dd reads a
# loop device. Both probes fire on the same calls in the same window.
if runs module; then
	if [ -e /lib/modules/loop.ko ] && insmod /lib/modules/loop.ko 2>mod.err && [ -e /dev/loop0 ] &&
		dd if=/dev/zero of=$W/loop.img bs=1024 count=1024 2>/dev/null && losetup /dev/loop0 $W/loop.img 2>>mod.err; then
		set -- 'k:loop_queue_rq'
		[ -z "$HAVE_FENTRY" ] || set -- "$@" 'f:loop_queue_rq(bd)'
		rm -f mod.ready
		bpftape record -o mod.arrow --force --ready-file mod.ready -d 60s "$@" >mod.out 2>>mod.err &
		mp=$!
		i=0
		while [ ! -e mod.ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
		dd if=/dev/loop0 of=/dev/null bs=4096 count=256 2>/dev/null
		kill -INT $mp
		wait $mp
		bpftape info --json mod.arrow >mod.json 2>>mod.err
		k=$(jprobe loop_queue_rq mod.json)
		f=$(jprobe 'loop_queue_rq#2' mod.json)
		tgt=$(grep -o '"name":"loop_queue_rq#2","kind":"fentry"[^}]*"target":"[^"]*"' mod.json | sed 's/.*"target":"//; s/"$//')
		if [ -z "$HAVE_FENTRY" ]; then
			[ "${k:-0}" -gt 0 ] && result module PASS "kprobe=$k" || result module FAIL "kprobe=$k;$(errtail mod.err)"
		else
			[ "${k:-0}" -gt 0 ] && [ "$k" = "$f" ] && [ "$tgt" = loop ] && result module PASS "kprobe=$k,fentry=$f,btf=$tgt" ||
				result module FAIL "kprobe=$k,fentry=$f,target=$tgt;$(errtail mod.err)"
		fi
		losetup -d /dev/loop0 2>/dev/null
	else
		result module FAIL "no-loop-device:$(errtail mod.err)"
	fi
fi

# Stacks. leaf's user stack on every call of the chain workload
# (testdata/stacks/chain.c) folds into main;top;mid;leaf exactly: x86-64
# kernels before 6.11, and arm64 ones, leave mid out of a stack taken by a
# uprobe on leaf's first instruction (where its return address is still on
# the stack top, or in x30), and the recorder puts it back. The capture
# still reads so once the binary is deleted. The chain lingers 300 ms
# before it exits: its mappings are read when its first event wakes the
# recorder, and on one vCPU the recorder ran after a chain that exited at
# once in 1 of 3 runs on 6.1 ("process exited before its mappings were
# read", as the README says of short-lived processes).
if runs stack-chain; then
	N_CHAIN=500
	cp /bin/chain $W/chain
	if rec chain -c "$W/chain $N_CHAIN 300" "leaf=u:$W/chain:leaf(ustack)"; then
		rm -f $W/chain
		got=$(bpftape stacks chain.arrow 2>chain.notes)
		[ "$got" = "main;top;mid;leaf $N_CHAIN" ] && [ ! -s chain.notes ] && result stack-chain PASS "$got,binary-deleted" ||
			result stack-chain FAIL "got=$got;$(head -c 200 chain.notes)"
	else
		result stack-chain FAIL "$(errtail chain.err)"
	fi
fi

# Kernel stacks from a tracepoint and from a kprobe hold the syscall
# entry: the exec of the -c command (sched_process_exec, in execve) and
# every one of its reads (vfs_read). Syscall tracepoints would not do:
# on 5.10 and 6.1 their perf handler passes the user registers, and their
# kernel stacks are empty.
if runs kstack; then
	if rec kstk -c "vmwork read 100 /dev/zero" 't:sched:sched_process_exec(kstack)' 'k:vfs_read(kstack)'; then
		bad=""
		for p in sched_process_exec:1 vfs_read:100; do
			n=${p#*:}
			p=${p%:*}
			bpftape stacks --comm vmwork kstk.arrow $p >kstk.$p 2>>kstk.err
			got=$(awk '{s+=$NF}END{print s+0}' kstk.$p)
			miss=$(grep -vc "$SYSCALL_ENTRY" kstk.$p)
			[ "$got" -ge "$n" ] && [ "$miss" = 0 ] || bad="$bad,$p:events=$got,without-$SYSCALL_ENTRY=$miss:$(grep -v "$SYSCALL_ENTRY" kstk.$p | head -n 2 | cut -c1-300)"
		done
		grep -q ';vfs_read ' kstk.vfs_read || bad="$bad,vfs_read-not-the-leaf"
		grep -q 'execve' kstk.sched_process_exec || bad="$bad,exec-without-execve"
		[ -z "$bad" ] && result kstack PASS "tracepoint,kprobe:$(head -n 1 kstk.vfs_read | cut -c1-120)" || result kstack FAIL "$bad;$(errtail kstk.err)"
	else
		result kstack FAIL "$(errtail kstk.err)"
	fi
fi

# Short-lived processes: the chain with one call of leaf exits within a
# millisecond of its only event, before the recorder's drain loop meets
# it. 10 runs under -c (exec'd by bpftape's gate) and 30 one after another
# from a shell under one -c: every stack folds into main;top;mid;leaf with
# no note, from the mappings the kernel's side-band records kept.
if runs stack-short; then
	ok=0
	i=0
	while [ $i -lt 10 ]; do
		i=$((i + 1))
		rec short -c "chain 1" "leaf=u:/bin/chain:leaf(ustack)" &&
			[ "$(bpftape stacks short.arrow 2>short.notes)" = "main;top;mid;leaf 1" ] && [ ! -s short.notes ] && ok=$((ok + 1))
	done
	if rec shorts -c "sh -c 'i=0; while [ \$i -lt 30 ]; do chain 1; i=\$((i + 1)); done'" "leaf=u:/bin/chain:leaf(ustack)"; then
		got=$(bpftape stacks shorts.arrow 2>shorts.notes)
		[ "$ok" = 10 ] && [ "$got" = "main;top;mid;leaf 30" ] && [ ! -s shorts.notes ] && result stack-short PASS "single=$ok/10,shell=$got" ||
			result stack-short FAIL "single=$ok/10,shell=$(echo "$got" | head -n 2 | cut -c1-80);$(head -c 200 short.notes shorts.notes)"
	else
		result stack-short FAIL "$(errtail shorts.err)"
	fi
fi

# profile:hz:99 for 3 s on the CPU-bound chain, already running (-p; long
# enough to outlast the recorder's setup, killed after): most
# samples are in its loop. (Under -c: profile-c, below.)
if runs profile; then
	chain 3000000000 >/dev/null &
	cp=$!
	if rec prof -p $cp -d 3s profile:hz:99; then
		bpftape stacks --user prof.arrow >prof.folded 2>>prof.err
		all=$(awk '{s+=$NF}END{print s+0}' prof.folded)
		hot=$(grep '^main;top' prof.folded | awk '{s+=$NF}END{print s+0}')
		[ "$all" -ge 20 ] && [ $((hot * 10)) -ge $((all * 8)) ] && result profile PASS "samples=$all,in-main;top=$hot" ||
			result profile FAIL "samples=$all,in-main;top=$hot;$(head -n 3 prof.folded | cut -c1-100);$(bpftape info prof.arrow | grep stacks:);$(cat prof.err | grep note | head -n 3)"
	else
		result profile FAIL "$(errtail prof.err)"
	fi
	kill $cp 2>/dev/null
	wait $cp 2>/dev/null
fi

# profile:hz:99 under -c, 10 runs: the chain (static, not PIE) is exec'd
# by bpftape's gate, itself static at the same addresses. In every run,
# the samples after the exec (t:sched:sched_process_exec, in the same
# capture) are at least 80% under main, and none is in the gate's Go code:
# the side-band's exec record starts the chain's own mappings at its time
# (6.12 got no usable mappings in 2 of 4 runs before it).
if runs profile-c; then
	good=0
	bad=""
	i=0
	while [ $i -lt 10 ]; do
		i=$((i + 1))
		if rec profc -c "chain 100000000" profile:hz:99 exec=t:sched:sched_process_exec; then
			from=$(bpftape events profc.arrow exec 2>>profc.err | awk 'NR==2{print $1}')
			bpftape stacks --user --from "${from:-0}s" profc.arrow profile >profc.folded 2>>profc.err
			all=$(awk '{s+=$NF}END{print s+0}' profc.folded)
			hot=$(grep '^main;' profc.folded | awk '{s+=$NF}END{print s+0}')
			gate=$(grep -E '(^|;)(runtime|syscall|main|os)\.' profc.folded | awk '{s+=$NF}END{print s+0}')
			if [ -n "$from" ] && [ "$all" -ge 10 ] && [ $((hot * 10)) -ge $((all * 8)) ] && [ "$gate" = 0 ]; then
				good=$((good + 1))
			else
				bad="$bad,run$i:exec=$from,samples=$all,under-main=$hot,gate=$gate:$(sort -k2 -n -r profc.folded | head -n 2 | cut -c1-80 | tr '\n' '|')"
			fi
		else
			bad="$bad,run$i:$(errtail profc.err)"
		fi
	done
	[ "$good" = 10 ] && result profile-c PASS "runs=$good/10,last:samples=$all,under-main=$hot" || result profile-c FAIL "runs=$good/10$bad"
fi

# Seed 002's stack examples (testdata/seed002/stacks.sh): stackcount
# submit_bio from a kprobe while dd reads a loop device.
if runs seed002-stacks; then
	if [ -e /bin/seed002-stacks.sh ] && [ -e /dev/loop0 ] && losetup /dev/loop0 $W/loop.img 2>/dev/null; then
		echo 3 >/proc/sys/vm/drop_caches
		PROF_CMD="chain 10000000" IO_CMD="dd if=/dev/loop0 of=/dev/null bs=4096 count=256" \
			sh /bin/seed002-stacks.sh $W/seed002s >seed002s.txt 2>seed002s.err
		st=$?
		sed 's/^/VMTEST-SEED002 /' seed002s.txt | head -n 120
		bio=$(sed -n '/^## stackcount submit_bio/,$p' seed002s.txt)
		if [ $st = 0 ] && echo "$bio" | grep -q '^  submit_bio$' && echo "$bio" | grep -q "$SYSCALL_ENTRY"; then
			result seed002-stacks PASS "profile,stackcount-submit_bio"
		else
			result seed002-stacks FAIL "exit=$st;$(echo "$bio" | head -n 4 | cut -c1-80);$(errtail seed002s.err)"
		fi
		losetup -d /dev/loop0 2>/dev/null
	else
		result seed002-stacks FAIL "no-loop-device"
	fi
fi

# fentry and fexit: arguments by their BTF names and types. They read them
# with bpf_get_func_arg (5.17), and arm64 attaches them with ftrace's direct
# calls (6.4): older kernels must refuse them saying so, naming the kprobe
# to use instead.
if [ -z "$HAVE_FENTRY" ]; then
	if runs fentry; then
		if rec fread -c "vmwork read 10 /dev/zero" 'f:vfs_read(count)'; then
			result fentry FAIL "recorded,but-this-kernel-cannot-attach-fentry"
		elif grep -q "${FENTRY_NEEDS:-fentry}" fread.err && grep -q "k:vfs_read" fread.err; then
			result fentry PASS "refused:$(grep -o "${FENTRY_NEEDS:-fentry}[^;]*" fread.err | head -n 1 | cut -c1-80)"
		else
			result fentry FAIL "want-a-refusal-naming-${FENTRY_NEEDS:-fentry}-and-k:vfs_read:$(errtail fread.err)"
		fi
	fi
else
	if runs fentry; then
		if rec fread -c "vmwork read $N_READ /dev/zero" 'fin=f:vfs_read(count)' 'fout=fr:vfs_read(count,retval)'; then
			truth=$(awk '$1=="read"{print $3}' fread.out)
			fin=$(bpftape events --time none --comm vmwork fread.arrow fin | awk -F'count=' 'NF>1{n++;s+=$2}END{print n+0":"s+0}')
			fout=$(bpftape events --time none --comm vmwork fread.arrow fout | awk -F'retval=' 'NF>1{n++;s+=$2}END{print n+0":"s+0}')
			[ "$fin" = "$N_READ:$truth" ] && result fentry PASS "events:sum=$fin,truth=$N_READ:$truth" || result fentry FAIL "events:sum=$fin,truth=$N_READ:$truth"
			[ "$fout" = "$N_READ:$truth" ] && result fexit PASS "events:sum=$fout" || result fexit FAIL "events:sum=$fout,truth=$N_READ:$truth"
			lat=$(pairs fread.arrow fin fout)
			[ "$lat" = "$N_READ:0:0" ] && result f-latency PASS "calls:unmatched=$lat" || result f-latency FAIL "calls:unmatched=$lat,want=$N_READ:0:0"
		else
			result fentry FAIL "$(errtail fread.err)"
		fi
	fi
	if runs f-string; then
		f=$W/fopen-marker
		if rec fopen -c "vmwork open $N_OPEN $f" 'f:do_sys_openat2(str(filename))'; then
			e=$(bpftape events --time none --comm vmwork fopen.arrow | grep -c "filename=\"$f\"")
			[ "$e" = "$N_OPEN" ] && result f-string PASS "events=$e/$N_OPEN" || result f-string FAIL "events=$e/$N_OPEN"
		else
			result f-string FAIL "$(errtail fopen.err)"
		fi
	fi
	# Seed 002: trace 'do_nanosleep(struct hrtimer_sleeper *t, ...) "task: %x", t->task'.
	if runs f-expr; then
		if rec fexpr -c "sh -c 'sleep 0.1; sleep 0.1; sleep 0.1'" 'f:do_nanosleep(t->task)'; then
			# t->task is a pointer: events prints it in hex.
			tasks=$(bpftape events --time none --comm sleep fexpr.arrow | grep -c 't->task=0x[1-9a-f]')
			[ "$tasks" = 3 ] && result f-expr PASS "sleeps=$tasks/3" || result f-expr FAIL "sleeps=$tasks/3:$(bpftape events --time none fexpr.arrow | head -n 3 | tr '\n' ' ')"
		else
			result f-expr FAIL "$(errtail fexpr.err)"
		fi
	fi
	if runs f-wildcard; then
		if rec fwild -c "vmwork read $N_READ /dev/zero" 'fr:vfs_rea*'; then
			n=$(grep -o '"kind":"fexit"' fwild.json | wc -l)
			c=$(bpftape count --comm vmwork fwild.arrow 'vfs_read:return' | awk '$1=="vfs_read:return"{print $2}')
			[ "$n" -ge 2 ] && [ "$c" = "$N_READ" ] && result f-wildcard PASS "probes=$n,vfs_read=$c" || result f-wildcard FAIL "probes=$n,vfs_read=$c,want=$N_READ"
		else
			result f-wildcard FAIL "$(errtail fwild.err)"
		fi
	fi
	# argdist -H 'p::tcp_sendmsg(struct sock *sk, struct msghdr *msg, size_t size):u32:size'
	if runs f-tcp; then
		if rec tcp -c "vmwork tcp $N_TCP" 'f:tcp_sendmsg(size)'; then
			truth=$(awk '$1=="tcp"{print $3}' tcp.out)
			got=$(bpftape events --time none --comm vmwork tcp.arrow | awk -F'size=' 'NF>1{n++;s+=$2}END{print n+0":"s+0}')
			[ "$got" = "$N_TCP:$truth" ] && result f-tcp PASS "events:sum=$got" || result f-tcp FAIL "events:sum=$got,truth=$N_TCP:$truth"
		else
			result f-tcp FAIL "$(errtail tcp.err)"
		fi
	fi

	# Seed 002's kernel-function examples (testdata/seed002/examples.sh, as
	# the README shows them), with the workload's known output.
	if runs seed002; then
		if [ -e /bin/seed002.sh ]; then
			READ_CMD="vmwork read $N_READ /dev/zero" OPEN_CMD="vmwork open 20 $W/seed-marker" TCP_CMD="vmwork tcp $N_TCP" \
				sh /bin/seed002.sh $W/seed002 >seed002.txt 2>seed002.err
			st=$?
			sed 's/^/VMTEST-SEED002 /' seed002.txt | head -n 200
			bad=""
			[ $st = 0 ] || bad="exit=$st"
			grep -q 'usecs *: count' seed002.txt || bad="$bad,no-funclatency"
			paths=$(grep -c " do_sys_openat2  *$W/seed-marker\$" seed002.txt)
			rets=$(grep -c ' do_sys_openat2:return ret: [0-9]' seed002.txt)
			[ "$paths" = 20 ] && [ "$rets" -ge 20 ] || bad="$bad,trace-paths=$paths,rets=$rets"
			grep -q 'size *: count' seed002.txt || bad="$bad,no-argdist"
			fc=$(awk '$1=="vfs_read"{print $2}' seed002.txt)
			[ "${fc:-0}" -ge "$N_READ" ] || bad="$bad,funccount-vfs_read=$fc"
			[ -z "$bad" ] && result seed002 PASS "funclatency,trace,argdist,funccount" || result seed002 FAIL "$bad;$(errtail seed002.err)"
		fi
	fi

	# Overhead per event, k: against f: on vfs_read: rounds of N_COST
	# reads alternate bare, under k: and under f:; a probe's cost is the
	# median of its rounds' extra ns per read. TCG makes the absolute
	# numbers meaningless: the ratio is the result.
	if runs cost; then
		cost() { # PROBE...: the workload's loop ns under a recording of PROBE (none: bare)
			if [ $# = 0 ]; then
				vmwork read $N_COST /dev/zero | awk '{print $4}'
			else
				bpftape record -o cost.arrow --force -c "vmwork read $N_COST /dev/zero" "$@" 2>cost.err | awk '$1=="read"{print $4}'
			fi
		}
		: >cost.txt
		for round in 1 2 3 4 5; do
			echo "$(cost) $(cost 'k:vfs_read(arg2)') $(cost 'f:vfs_read(count)')" >>cost.txt
		done
		# Medians of the 5 rounds' extra ns per read (sorted with sort -n).
		kk=$(awk -v n=$N_COST '{print ($2-$1)/n}' cost.txt | sort -n | sed -n 3p)
		ff=$(awk -v n=$N_COST '{print ($3-$1)/n}' cost.txt | sort -n | sed -n 3p)
		ratio=$(awk -v k="$kk" -v f="$ff" 'BEGIN{if (f>0) printf "k=%.0fns,f=%.0fns,k/f=%.2f", k, f, k/f; else printf "k=%sns,f=%sns", k, f}')
		# Every round has its three numbers, and each probe costs something.
		rounds_ok=$(awk 'NF==3 && $1>0 && $2>0 && $3>0 {n++} END{print n+0}' cost.txt)
		case "$rounds_ok,$ratio" in
		5,k=[1-9]*ns,f=[1-9]*ns,k/f=*) result cost PASS "$ratio,rounds=$(tr ' \n' '/;' <cost.txt)" ;;
		*) result cost FAIL "$ratio,$(errtail cost.err)" ;;
		esac
	fi
fi

# Time to ready: 4 and 20 probes (uprobe, uretprobe, USDT with a semaphore
# and a tracepoint, repeated under other names), 3 runs each; the ready
# file's setup_ms is the recorder's own time from start to every probe
# attached. Without attach cookies this is one program load per probe.
ready_ms() { # N: setup_ms of one recording of N probes
	groups=$(($1 / 4))
	set --
	i=0
	while [ $i -lt $groups ]; do
		set -- "$@" "u$i=u:/bin/probes:tick(arg0)" "r$i=ur:/bin/probes:tick" "s$i=U:/bin/probes:test:guarded" "t$i=t:syscalls:sys_exit_write(ret)"
		i=$((i + 1))
	done
	rm -f rd.ready
	bpftape record -o rd.arrow --force --ready-file rd.ready -c "probes exit 0" "$@" >rd.out 2>rd.err || return 1
	sed -n 's/^setup_ms=//p' rd.ready
}
if runs ready; then
	detail=""
	ok=PASS
	for n in 4 20; do
		ms=""
		for run in 1 2 3; do
			m=$(ready_ms $n) || { ok=FAIL; m="error:$(errtail rd.err)"; }
			case "$m" in [0-9]*) ;; *) ok=FAIL ;; esac
			ms="$ms${ms:+/}$m"
		done
		detail="$detail${detail:+,}$n-probes=${ms}ms"
	done
	result ready $ok "$detail"
fi

# Rate limits: 2,000 ticks as fast as the workload calls, under --max-rate
# 100/s (the build of the programs with the rate limits' code): every call
# is either recorded or counted rate-limited, and most are rate-limited.
if runs max-rate; then
	if rec mr --max-rate 100/s -c "probes burst $N_BURST" 'u:/bin/probes:tick(arg0)'; then
		got=$(jprobe tick mr.json)
		lim=$(jnum rate_limited mr.json)
		[ $((${got:-0} + ${lim:-0})) = "$N_BURST" ] && [ "${lim:-0}" -gt $((N_BURST / 2)) ] && result max-rate PASS "recorded=$got,rate-limited=$lim,fired=$N_BURST" ||
			result max-rate FAIL "recorded=$got,rate-limited=$lim,fired=$N_BURST;$(errtail mr.err)"
	else
		result max-rate FAIL "$(errtail mr.err)"
	fi
fi

# The flight recorder: a workload calling f every 2 ms for 8 s with one
# 200-ms call at 4 s, under --flight 2s with a latency trigger and 1 s
# after it: exactly one snapshot, which holds the slow call (latency's
# max), says what took it, and reaches 2 s back from its end, at most a
# batch (1 s) more.
if runs flight; then
	rm -f fl-*.arrow
	if rec fl --flight 2s --trigger-latency 'f f:return > 50ms' --after 1s -c "slow 8 4 2000" 'u:/bin/slow:f(arg0)' 'ur:/bin/slow:f(retval)'; then
		snaps=$(ls fl-*.arrow 2>/dev/null | tr '\n' ' ')
		bpftape latency fl-0001.arrow f f:return >fl.lat 2>>fl.err
		max=$(sed -n 's/.*max \([0-9]*\).*/\1/p' fl.lat)
		bpftape info --json fl-0001.arrow >fl1.json 2>>fl.err
		span=$(($(jnum last_event_ns fl1.json) - $(jnum first_event_ns fl1.json)))
		bpftape info fl-0001.arrow | grep -q '^snapshot: *taken on latency f f:return > 50ms' && trig=yes || trig=no
		if [ "$snaps" = "fl-0001.arrow " ] && [ "${max:-0}" -ge 200000000 ] && [ "$trig" = yes ] && [ "$span" -ge 1900000000 ] && [ "$span" -le 3200000000 ]; then
			result flight PASS "snapshot=fl-0001.arrow,slow-call-max=${max}ns,span=${span}ns"
		else
			result flight FAIL "snapshots=$snaps,max=$max,trigger=$trig,span=$span;$(errtail fl.err)"
		fi
	else
		result flight FAIL "$(errtail fl.err)"
	fi
fi

# The cross-architecture capture: a small recording (a kprobe with a kernel
# stack and its kretprobe on vfs_read, a uprobe with a user stack on the
# chain's leaf) printed on the console in base64 (VMTEST-XB lines) after its
# digest, then the digest and exit status of what hist, latency, stacks and
# info print of it here, with the output itself (VMTEST-XO lines). run.sh
# decodes it and runs the host's bpftape on it: the same bytes (check
# xarch). The guest has no time zone: UTC, as run.sh sets on the host.
if runs xarch; then
	cp /bin/chain $W/xchain
	if rec xarch -c "sh -c '$W/xchain 50 300; vmwork read 100 /dev/zero'" 'xin=k:vfs_read(arg2, kstack)' 'xout=kr:vfs_read' "leaf=u:$W/xchain:leaf(ustack)"; then
		echo "VMTEST-XARCH-BEGIN kernel=$K file=xarch.arrow bytes=$(wc -c <xarch.arrow) sha256=$(sha256sum <xarch.arrow | cut -d' ' -f1)"
		base64 xarch.arrow | sed 's/^/VMTEST-XB /'
		i=0
		for cmd in "hist xarch.arrow xin arg2" "latency xarch.arrow xin xout" "stacks xarch.arrow xin" "stacks xarch.arrow leaf" "info xarch.arrow"; do
			i=$((i + 1))
			# shellcheck disable=SC2086 # the command, word by word
			bpftape $cmd >xarch.$i 2>xarch.err
			st=$?
			echo "VMTEST-XARCH-CMD kernel=$K status=$st sha256=$(sha256sum <xarch.$i | cut -d' ' -f1) $cmd"
			sed "s/^/VMTEST-XO kernel=$K $i /" xarch.$i
		done
		echo "VMTEST-XARCH-END kernel=$K"
	else
		result xarch FAIL "$(errtail xarch.err)"
	fi
fi

echo "VMTEST kernel=$K done fails=$fails"

