#!/bin/sh
# guestcheck.sh: record the USDT torture workload with bpftape and compare
# every recorded value with the ground truth the workload prints, on a host
# that has neither a compiler nor Go (an arm64 QEMU guest under busybox sh
# and awk; it runs on any architecture).
#
#   guestcheck.sh BPFTAPE TORTURE [LIBTORTURE]
#
# BPFTAPE is the bpftape binary, TORTURE the torture executable, LIBTORTURE
# its shared library libtorture.so when TORTURE is linked against it. Run it
# as root. It lists TORTURE's (and LIBTORTURE's) USDT probes with 'bpftape
# list --usdt', records all of them, and the uprobes torture_func and
# torture_static, with 'bpftape record -c' while TORTURE runs (which raises
# the semaphores, so the guarded probes fire too), prints the events with
# 'bpftape events', and checks, per probe, that there are as many events as
# ground-truth lines and that each field argN equals value N of its line:
# all of them, as the decimal strings the workload prints (signed only for
# a signed argument, as bpftape prints them). The last line it prints is
# "PASS detail" (exit 0) or "FAIL detail" (exit 1); diagnostics go to
# stderr. GUESTCHECK_ITERS (default 4) and GUESTCHECK_SEED (default
# 0x5eed1234abcd) set the workload's iterations and seed; GUESTCHECK_KEEP=1
# keeps its working directory.
#
# Building the arm64 binaries, on a Debian x86-64 host with
# gcc-aarch64-linux-gnu (and clang, for the clang variant), from this
# directory. sys/sdt.h is the host's (systemtap-sdt-dev), the same for every
# architecture, but the cross compiler does not search the multiarch
# directory it is in:
#
#   mkdir -p /tmp/sdt/sys
#   cp /usr/include/x86_64-linux-gnu/sys/sdt.h /usr/include/x86_64-linux-gnu/sys/sdt-config.h /tmp/sdt/sys/
#   CC="aarch64-linux-gnu-gcc -O2 -I/tmp/sdt"      # or: clang --target=aarch64-linux-gnu -O2 -I/tmp/sdt
#   $CC -fno-omit-frame-pointer -DFRAME_VARIANT=rbp -c -o frames_rbp.o frames.c
#   $CC -fomit-frame-pointer -DFRAME_VARIANT=rsp -c -o frames_rsp.o frames.c
#   $CC -c -o forms_arm64.o forms_arm64.S
#   $CC -c -o torture.o torture.c
#   $CC -c -o torture_sem.o torture_sem.c
#
# A static executable needs nothing else in the guest. Without a dynamic
# linker there is no shared library: link torturelib.c into the executable,
# whose notes then hold the torturelib probes too (provider torturelib, its
# two semaphores in the executable's .probes):
#
#   $CC -c -o torturelib.o torturelib.c
#   aarch64-linux-gnu-gcc -static -o torture torture.o torture_sem.o frames_rbp.o \
#       frames_rsp.o forms_arm64.o torturelib.o
#   guestcheck.sh /usr/bin/bpftape ./torture
#
# The shared-library probes, as recorded from a library file, need a
# dynamic executable and, in the guest, its dynamic linker and C library
# copied from the cross toolchain: /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1
# to /lib/ld-linux-aarch64.so.1 and /usr/aarch64-linux-gnu/lib/libc.so.6 to
# /lib/ (or anywhere on LD_LIBRARY_PATH), with libtorture.so beside the
# executable (this script puts LIBTORTURE's directory on LD_LIBRARY_PATH):
#
#   $CC -fPIC -c -o torturelib.o torturelib.c
#   aarch64-linux-gnu-gcc -shared -o libtorture.so torturelib.o
#   aarch64-linux-gnu-gcc -o torture torture.o torture_sem.o frames_rbp.o \
#       frames_rsp.o forms_arm64.o -L. -ltorture
#   guestcheck.sh /usr/bin/bpftape ./torture ./libtorture.so
#
# Build -O0 variants as well (CC with -O0): gcc -O0 reads everything as
# [sp, OFF], gcc -O2 as registers, [xN, OFF] and [xN, -OFF], clang as [xN].
# On x86-64 the same script checks a build made as torture.c says.

usage() {
	echo "usage: guestcheck.sh BPFTAPE TORTURE [LIBTORTURE]" >&2
	echo "FAIL usage"
	exit 1
}
fail() {
	echo "FAIL $*"
	exit 1
}

[ $# -eq 2 ] || [ $# -eq 3 ] || usage
bpftape=$1
exe=$2
lib=${3:-}
iters=${GUESTCHECK_ITERS:-4}
seed=${GUESTCHECK_SEED:-0x5eed1234abcd}
[ -x "$bpftape" ] || fail "bpftape $bpftape is not an executable file"
[ -x "$exe" ] || fail "torture $exe is not an executable file"
[ -z "$lib" ] || [ -f "$lib" ] || fail "library $lib is not a file"
if [ -n "$lib" ]; then
	LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/guestcheck.XXXXXX") || fail "mktemp"
if [ "${GUESTCHECK_KEEP:-}" = 1 ]; then
	echo "guestcheck: working directory $work" >&2
else
	trap 'rm -rf "$work"' EXIT
fi

# The USDT probes, one "PROVIDER:NAME NARGS BINARY" line each.
: >"$work/probes"
for bin in "$exe" "$lib"; do
	[ -n "$bin" ] || continue
	"$bpftape" list --usdt "$bin" >"$work/list" 2>"$work/list.err" ||
		fail "bpftape list --usdt $bin: $(head -n 1 "$work/list.err")"
	awk -v bin="$bin" -v diag="$work/diag" '
		/^usdt:/ {
			n = split($1, part, ":")
			name = part[n - 1] ":" part[n]
			if ($0 ~ /arguments unreadable/) {
				print "guestcheck: " name ": arguments unreadable" > diag
				bad = 1
			}
			nargs = 0
			if (match($0, /; [0-9]+ args?/))
				nargs = substr($0, RSTART + 2, RLENGTH - 2) + 0
			print name, nargs, bin
		}
		END { exit bad }
	' "$work/list" >>"$work/probes" || {
		cat "$work/diag" >&2
		fail "bpftape list cannot read the arguments of some probes of $bin"
	}
done
nprobes=$(wc -l <"$work/probes")
[ "$nprobes" -gt 0 ] || fail "no USDT probes in $exe $lib"

# Probe specs: NAME=U:BINARY:PROVIDER:NAME, named PROVIDER.NAME; a probe of
# 13 arguments records 12 of them (all but arg6, as record/torture_test.go
# does); the uprobes as F.FUNCTION with their two arguments, signed as the
# workload prints them.
set --
while read -r name nargs bin; do
	spec="$(echo "$name" | tr : .)=U:$bin:$name"
	if [ "$nargs" -gt 12 ]; then
		fields=""
		i=0
		while [ "$i" -lt "$nargs" ]; do
			if [ "$i" -ne 6 ] && [ "$i" -lt 13 ]; then
				fields="$fields${fields:+,}arg$i"
			fi
			i=$((i + 1))
		done
		spec="$spec($fields)"
	fi
	set -- "$@" "$spec"
done <"$work/probes"
set -- "$@" "F.torture_func=u:$exe:torture_func(arg0:s64,arg1:s64)" "F.torture_static=u:$exe:torture_static(arg0:s64)"

"$bpftape" record -o "$work/c.arrow" -c "'$exe' $iters $seed" "$@" >"$work/truth" 2>"$work/record.err"
rc=$?
cat "$work/record.err" >&2
[ "$rc" -eq 0 ] || fail "bpftape record exited with status $rc: $(grep -v '^ ' "$work/record.err" | tail -n 1)"
grep -q ', 0 lost;' "$work/record.err" || fail "events were lost: $(head -n 1 "$work/record.err")"
if grep -q 'unreadable values' "$work/record.err"; then
	fail "$(grep 'unreadable values' "$work/record.err")"
fi
[ -s "$work/truth" ] || fail "$exe printed no ground truth"
"$bpftape" events --time none "$work/c.arrow" >"$work/events" 2>"$work/events.err" ||
	fail "bpftape events: $(head -n 1 "$work/events.err")"

# The comparison. Values are compared as strings: awk's numbers are doubles,
# which do not hold every 64-bit value.
awk -v probes="$work/probes" -v diag="$work/diag" '
	FNR == 1 { file++ }
	# The workload: "P PROVIDER:NAME I V0 V1 ..." and "F FUNCTION I A0 A1".
	file == 1 {
		if ($1 == "P")
			key = $2
		else if ($1 == "F")
			key = "F:" $2
		else
			next
		gsub(/:/, ".", key)
		j = nt[key] + 0
		if ($3 != j "") {
			printf "guestcheck: truth line %s %s out of order\n", key, $3 > diag
			bad++
		}
		for (k = 4; k <= NF; k++)
			truth[key, j, k - 4] = $k
		nv[key, j] = NF - 3
		nt[key] = j + 1
		next
	}
	# bpftape events: "PID TID COMM FUNC argN=V ...".
	file == 2 {
		if ($1 == "PID")
			next
		first = 0
		for (k = 1; k <= NF; k++)
			if ($k ~ /^arg[0-9]+=/) {
				first = k
				break
			}
		if (first < 2) {
			printf "guestcheck: event without arguments: %s\n", $0 > diag
			bad++
			next
		}
		key = $(first - 1)
		i = ne[key] + 0
		ne[key] = i + 1
		if (i >= nt[key] + 0) {
			if (extra[key]++ == 0) {
				printf "guestcheck: %s: more events than the workload fired\n", key > diag
				bad++
			}
			next
		}
		for (k = first; k <= NF; k++) {
			eq = index($k, "=")
			n = substr($k, 4, eq - 4) + 0
			v = substr($k, eq + 1)
			if (n >= nv[key, i]) {
				printf "guestcheck: %s event %d: arg%d has no ground truth\n", key, i, n > diag
				bad++
				continue
			}
			want = truth[key, i, n]
			if ((v "") != (want "")) {
				if (shown++ < 20)
					printf "guestcheck: %s event %d arg%d = %s, want %s\n", key, i, n, v, want > diag
				bad++
				if (!(key in wrong))
					wrong[key] = sprintf("%s event %d arg%d = %s, want %s", key, i, n, v, want)
				continue
			}
			checked++
		}
		next
	}
	END {
		while ((getline line < probes) > 0) {
			split(line, f, " ")
			key = f[1]
			gsub(/:/, ".", key)
			listed[key] = 1
		}
		listed["F.torture_func"] = 1
		listed["F.torture_static"] = 1
		for (key in listed) {
			nkeys++
			if (nt[key] + 0 == 0) {
				printf "guestcheck: %s: the workload never fired it\n", key > diag
				missing = missing " " key
				bad++
			} else if (ne[key] + 0 != nt[key] + 0) {
				printf "guestcheck: %s: %d events, the workload fired it %d times\n", key, ne[key], nt[key] > diag
				count = count " " key
				bad++
			}
		}
		for (key in nt)
			if (!(key in listed)) {
				printf "guestcheck: %s: fired but not recorded\n", key > diag
				unrecorded = unrecorded " " key
				bad++
			}
		if (bad) {
			detail = bad " problems"
			for (key in wrong) {
				detail = detail "; a wrong value: " wrong[key]
				break
			}
			if (unrecorded != "")
				detail = detail "; fired but not recorded (a shared library not given?):" unrecorded
			if (count != "")
				detail = detail "; wrong event counts:" count
			if (missing != "")
				detail = detail "; never fired:" missing
			print "FAIL " detail
			exit 1
		}
		printf "PASS %d probes, %d values equal to the ground truth\n", nkeys, checked
	}
' "$work/truth" "$work/events" >"$work/result"
rc=$?
[ -f "$work/diag" ] && cat "$work/diag" >&2
cat "$work/result"
exit $rc
