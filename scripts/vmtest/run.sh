#!/bin/sh
# run.sh [KERNEL...]: `make vmtest`. Fetches the kernels of ./kernels (cached
# in $VMTEST_CACHE, default /var/cache/bpftape-vmtest), builds static bpftape
# and the static workloads into an initramfs per architecture (amd64 with
# the host's gcc and busybox; arm64 with GOARCH=arm64, aarch64-linux-gnu-gcc
# and Debian's arm64 busybox-static), boots each kernel under QEMU TCG (KVM
# does not work on these hosts; qemu-system-x86_64, or qemu-system-aarch64
# -M virt -cpu max for arm64, see arm64_cpu) with guest.sh as the checks,
# and prints a kernel × check table. An arm64 guest also prints one small capture on
# its console with the digests of hist, latency, stacks and info of it:
# the host-built bpftape must print the same bytes (the xarch check).
# Exits non-zero when a check fails or a guest does not finish; such a
# guest's console tail is printed. VMTEST_CHECKS="uprobe kstack ..." runs
# only those checks in every guest (for trying one; guest.sh says which
# name runs which block); VMTEST_REC_TIMEOUT (seconds, default 120) is how
# long a guest's recording may take before it is diagnosed and killed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${VMTEST_CACHE:-/var/cache/bpftape-vmtest}
out=${VMTEST_OUT:-$root/out/vmtest}
timeout=${VMTEST_TIMEOUT:-900} # a guest's wall time; 6.1-rt (two TCG vCPUs) needs ~530 s with the stack checks
mem=${VMTEST_MEM:-1024}
# Debian's arm64 kernels sign every return address (pointer
# authentication); QEMU emulates the architected QARMA5 algorithm slowly,
# and its implementation-defined one several times faster: a guest of the
# uprobe and ready checks took 118 s with -cpu max, 19 s with this.
arm64_cpu=${VMTEST_ARM64_CPU:-max,pauth-impdef=on}
only="$*"
table=${VMTEST_TABLE:-$here/kernels} # another table, for trying an expectation
checks=$(echo "${VMTEST_CHECKS:-}" | tr ' ' ',')

sh "$here/fetch.sh" "$cache" "$table"

# The selected rows: name arch suite package cpus expect.
mkdir -p "$out"
grep -v '^#' "$table" | while read -r name arch suite pkg cpus expect; do
	[ -n "$name" ] || continue
	if [ -n "$only" ]; then
		case " $only " in *" $name "*) ;; *) continue ;; esac
	fi
	echo "$name $arch $suite $pkg $cpus $expect"
done >"$out/rows"
archs=$(awk '{print $2}' "$out/rows" | sort -u)

# build_root ARCH DIR: ARCH's initramfs in DIR/initramfs.gz, from DIR/root:
# busybox, bpftape, the workloads, init and the checks.
build_root() {
	a=$1
	d=$2
	rm -rf "$d/root"
	mkdir -p "$d/root/bin" "$d/root/proc" "$d/root/sys" "$d/root/dev" "$d/root/tmp"
	echo "vmtest: building static bpftape and workloads for $a" >&2
	(cd "$root" && CGO_ENABLED=0 GOARCH=$a go build -o "$d/root/bin/bpftape" ./cmd/bpftape)
	case "$a" in
	amd64)
		cc=gcc
		cflags="-O2 -static -fno-omit-frame-pointer -fcf-protection=none"
		cf0="-O0 -static -fno-omit-frame-pointer -fcf-protection=none"
		inc=""
		busybox=/bin/busybox
		;;
	arm64)
		# The cross compiler has no sys/sdt.h of its own: systemtap-sdt-dev's
		# (the host's) holds no architecture's code but the operands'.
		cc=aarch64-linux-gnu-gcc
		inc="$d/include"
		mkdir -p "$inc/sys"
		cp /usr/include/x86_64-linux-gnu/sys/sdt.h /usr/include/x86_64-linux-gnu/sys/sdt-config.h "$inc/sys/"
		inc="-I$inc"
		cflags="-O2 -static -fno-omit-frame-pointer"
		cf0="-O0 -static -fno-omit-frame-pointer"
		busybox=$cache/busybox-arm64
		;;
	*)
		echo "vmtest: no initramfs for architecture $a" >&2
		exit 2
		;;
	esac
	$cc $cflags $inc -o "$d/root/bin/probes" "$root/record/testdata/probes.c"
	$cc $cflags -pthread -o "$d/root/bin/vmwork" "$root/testdata/vmtest/vmwork.c"
	ln -s vmwork "$d/root/bin/vmt-exec"
	# The stack workload at -O0, as its test builds it.
	$cc $cf0 -o "$d/root/bin/chain" "$root/testdata/stacks/chain.c"
	# The flight recorder's workload (one slow call among many).
	$cc $cflags -o "$d/root/bin/slow" "$root/testdata/flight/slow.c"
	# USDT in a shared library: a dynamic workload, its library, and the
	# loader and libc at the paths it names (the host's, as ldd finds
	# them; for arm64 the cross toolchain's, in /lib).
	mkdir -p "$d/root/lib/vmtest"
	$cc -O2 -fPIC -shared $inc -o "$d/root/lib/vmtest/libvmusdt.so" "$root/testdata/vmtest/libvmusdt.c"
	$cc -O2 -o "$d/root/bin/usdtlib" "$root/testdata/vmtest/usdtlib.c" \
		-L"$d/root/lib/vmtest" -lvmusdt -Wl,-rpath,/lib/vmtest
	if [ "$a" = amd64 ]; then
		for so in $(ldd "$d/root/bin/usdtlib" | grep -o '/[^ ]*' | grep -v "^$d/"); do
			mkdir -p "$d/root$(dirname "$so")"
			cp -L "$so" "$d/root$so"
		done
	else
		cross=/usr/aarch64-linux-gnu/lib
		interp=$(readelf -l "$d/root/bin/usdtlib" | sed -n 's/.*interpreter: \([^]]*\)].*/\1/p')
		mkdir -p "$d/root$(dirname "$interp")"
		cp -L "$cross/$(basename "$interp")" "$d/root$interp"
		for so in $(readelf -d "$d/root/bin/usdtlib" "$d/root/lib/vmtest/libvmusdt.so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort -u); do
			[ "$so" = libvmusdt.so ] || cp -L "$cross/$so" "$d/root/lib/$so"
		done
	fi
	if [ "$a" = arm64 ]; then
		arm64_extra "$d"
	fi
	cp "$busybox" "$d/root/bin/busybox"
	cp "$here/init" "$d/root/init"
	cp "$here/guest.sh" "$d/root/bin/guest.sh"
	cp "$root/testdata/seed002/examples.sh" "$d/root/bin/seed002.sh"
	cp "$root/testdata/seed002/stacks.sh" "$d/root/bin/seed002-stacks.sh"
	chmod 755 "$d/root/init" "$d/root/bin/guest.sh"
	(cd "$d/root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$d/initramfs.gz")
}

# arm64_extra DIR: what only the arm64 guests check, when the tree has it.
# The AAPCS64 workload (testdata/abi) as /bin/abiwork, with its DWARF. The
# USDT torture workload (testdata/usdt-torture) with its guest check
# (guestcheck.sh), built as that check's header says, in
# /torture/VARIANT/: gcc -O2 linked with libtorture.so, gcc -O0 and
# clang -O2 static, each with the library's probes linked in; guest.sh
# runs the check on each.
arm64_extra() {
	ad=$1
	if [ -e "$root/testdata/abi/abiwork.c" ]; then
		aarch64-linux-gnu-gcc -g -O2 -static -o "$ad/root/bin/abiwork" "$root/testdata/abi/abiwork.c"
	fi
	t=$root/testdata/usdt-torture
	[ -e "$t/guestcheck.sh" ] || return 0
	mkdir -p "$ad/root/torture"
	cp "$t/guestcheck.sh" "$ad/root/torture/guestcheck.sh"
	for v in gcc-O2 gcc-O0 clang-O2; do
		case "$v" in
		gcc-*) tcc="aarch64-linux-gnu-gcc -${v#gcc-}" ;;
		clang-*) tcc="clang --target=aarch64-linux-gnu -${v#clang-}" ;;
		esac
		tcc="$tcc -I$ad/include"
		b="$ad/torture-build/$v"
		rm -rf "$b"
		mkdir -p "$b" "$ad/root/torture/$v"
		$tcc -fno-omit-frame-pointer -DFRAME_VARIANT=rbp -c -o "$b/frames_rbp.o" "$t/frames.c"
		$tcc -fomit-frame-pointer -DFRAME_VARIANT=rsp -c -o "$b/frames_rsp.o" "$t/frames.c"
		$tcc -c -o "$b/forms_arm64.o" "$t/forms_arm64.S"
		$tcc -c -o "$b/torture.o" "$t/torture.c"
		$tcc -c -o "$b/torture_sem.o" "$t/torture_sem.c"
		$tcc -fPIC -c -o "$b/torturelib.o" "$t/torturelib.c"
		set -- "$b/torture.o" "$b/torture_sem.o" "$b/frames_rbp.o" "$b/frames_rsp.o" "$b/forms_arm64.o"
		if [ "$v" = gcc-O2 ]; then
			aarch64-linux-gnu-gcc -shared -o "$ad/root/torture/$v/libtorture.so" "$b/torturelib.o"
			aarch64-linux-gnu-gcc -o "$ad/root/torture/$v/torture" "$@" -L"$ad/root/torture/$v" -ltorture
		else
			aarch64-linux-gnu-gcc -static -o "$ad/root/torture/$v/torture" "$@" "$b/torturelib.o"
		fi
	done
}

for a in $archs; do
	if [ "$a" = amd64 ]; then
		build_root amd64 "$out"
	else
		build_root "$a" "$out/$a"
	fi
done
# The host's own bpftape, which must read an arm64 guest's capture as the
# guest did.
if echo "$archs" | grep -qv '^amd64$'; then
	(cd "$root" && go build -o "$out/host/bpftape" ./cmd/bpftape)
fi

# boot NAME ARCH CPUS EXPECT INITRD: one guest, its console in $log; sets st
# (qemu's status), t0 and t1 (its start and end), done (the checks ended)
# and failed (a check failed).
boot() {
	t0=$(date +%s)
	echo "vmtest: booting $1 ($(cat "$cache/$1/release"), $2, $3 vCPU, expect $4)" >&2
	st=0
	# oops=panic: a kernel oops ends the guest at once (panic=-1 reboots,
	# which -no-reboot turns into qemu's exit) instead of leaving the
	# checks hung until the timeout.
	append="panic=-1 oops=panic quiet loglevel=3 rcupdate.rcu_task_stall_timeout=7500 vmtest.kernel=$1 vmtest.expect=$4"
	[ -z "$checks" ] || append="$append vmtest.checks=$checks"
	[ -z "${VMTEST_REC_TIMEOUT:-}" ] || append="$append vmtest.rec_timeout=$VMTEST_REC_TIMEOUT"
	case "$2" in
	arm64)
		timeout "$timeout" qemu-system-aarch64 -M virt -cpu "$arm64_cpu" -accel tcg -smp "$3" -m "$mem" \
			-kernel "$cache/$1/vmlinuz" -initrd "$5" \
			-append "console=ttyAMA0 $append" \
			-nographic -no-reboot -monitor none -nic none </dev/null >"$log" 2>&1 || st=$?
		;;
	*)
		timeout "$timeout" qemu-system-x86_64 -accel tcg -smp "$3" -m "$mem" \
			-kernel "$cache/$1/vmlinuz" -initrd "$5" \
			-append "console=ttyS0 $append" \
			-nographic -no-reboot -monitor none -nic none </dev/null >"$log" 2>&1 || st=$?
		;;
	esac
	t1=$(date +%s)
	done=1
	tr -d '\r' <"$log" | grep -q "^VMTEST kernel=$1 done" || done=0
	failed=0
	tr -d '\r' <"$log" | grep -q "^VMTEST kernel=$1 check=.* result=FAIL" && failed=1
	return 0
}

# xarch NAME: the cross-architecture check of the capture guest NAME printed
# on its console (VMTEST-XARCH lines, from guest.sh), if it printed one: the
# capture decodes to the digest the guest gave, every one of the guest's
# commands succeeded there, and the host's bpftape prints for each the same
# exit status and the same bytes (sha256) as the guest's. Its result joins the guest's; on a
# difference, the diff against the guest's output (VMTEST-XO lines) goes
# to stderr. The files stay in $out/NAME-xarch/.
xarch() {
	x="$out/$1-xarch"
	rm -rf "$x"
	tr -d '\r' <"$log" | grep -q "^VMTEST-XARCH-BEGIN kernel=$1 " || return 0
	mkdir -p "$x"
	tr -d '\r' <"$log" >"$x/console"
	want=$(sed -n "s/^VMTEST-XARCH-BEGIN kernel=$1 .*sha256=\([0-9a-f]*\).*/\1/p" "$x/console")
	file=$(sed -n "s/^VMTEST-XARCH-BEGIN kernel=$1 .*file=\([^ ]*\).*/\1/p" "$x/console")
	sed -n 's/^VMTEST-XB //p' "$x/console" | base64 -d >"$x/$file" 2>/dev/null || true
	got=$(sha256sum <"$x/$file" | cut -d' ' -f1)
	if [ "$got" != "$want" ]; then
		echo "VMTEST kernel=$1 check=xarch result=FAIL detail=capture-decoded-to-sha256-$got,guest-said-$want" >>"$out/results"
		return 0
	fi
	bad=""
	verbs=""
	i=0
	sed -n "s/^VMTEST-XARCH-CMD kernel=$1 //p" "$x/console" >"$x/cmds"
	while read -r gst gsum cmd; do
		i=$((i + 1))
		gst=${gst#status=}
		gsum=${gsum#sha256=}
		hst=0
		# shellcheck disable=SC2086 # the guest's command, word by word
		(cd "$x" && TZ=UTC "$out/host/bpftape" $cmd </dev/null >"$x/$i.host" 2>"$x/$i.err") || hst=$?
		hsum=$(sha256sum <"$x/$i.host" | cut -d' ' -f1)
		sed -n "s/^VMTEST-XO kernel=$1 $i //p" "$x/console" >"$x/$i.guest"
		verbs="$verbs${verbs:+,}${cmd%% *}"
		if [ "$gst" != 0 ]; then
			bad="$bad${bad:+,}${cmd%% *}:guest-status-$gst"
			echo "vmtest: $1: the guest's \`bpftape $cmd\` failed (status $gst); the host's says:" >&2
			head -n 5 "$x/$i.err" >&2
		elif [ "$hst" != "$gst" ] || [ "$hsum" != "$gsum" ]; then
			bad="$bad${bad:+,}${cmd%% *}:status-$hst/$gst"
			echo "vmtest: $1: host's \`bpftape $cmd\` (status $hst) differs from the guest's (status $gst); diff guest host:" >&2
			diff "$x/$i.guest" "$x/$i.host" | head -n 30 >&2 || true
			head -n 5 "$x/$i.err" >&2
		fi
	done <"$x/cmds"
	if [ "$i" = 0 ]; then
		echo "VMTEST kernel=$1 check=xarch result=FAIL detail=no-commands" >>"$out/results"
	elif [ -n "$bad" ]; then
		echo "VMTEST kernel=$1 check=xarch result=FAIL detail=differ:$bad" >>"$out/results"
	else
		echo "VMTEST kernel=$1 check=xarch result=PASS detail=$verbs-identical,capture=$(wc -c <"$x/$file")B,$(grep -c '^VMTEST-XB ' "$x/console")-lines" >>"$out/results"
	fi
}

start=$(date +%s)
: >"$out/results"
while read -r name arch suite pkg cpus expect; do
	log="$out/$name.log"
	retry=""
	base="$out"
	[ "$arch" = amd64 ] || base="$out/$arch"
	# This kernel's loop module, as a second cpio archive after the
	# shared one (the kernel unpacks concatenated archives in order).
	initrd="$base/initramfs.gz"
	if [ -s "$cache/$name/loop.ko" ]; then
		rm -rf "$out/mod" && mkdir -p "$out/mod/lib/modules"
		cp "$cache/$name/loop.ko" "$out/mod/lib/modules/loop.ko"
		(cd "$out/mod" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out/mod.gz")
		cat "$base/initramfs.gz" "$out/mod.gz" >"$out/initramfs-$name.gz"
		initrd="$out/initramfs-$name.gz"
	fi
	# A guest that stops making progress or oopses with no check failed
	# (seen on 6.1-rt's two TCG vCPUs: an RCU-tasks grace period that
	# never ends, which the kernel reports after 30 s with its holdout
	# task; a NULL call in vfs_read while a kprobe was attached to it) is
	# booted once more; the table's guest column says RETRY, and the
	# first console is kept as NAME.log.1 and its tail printed.
	for attempt in 1 2; do
		boot "$name" "$arch" "$cpus" "$expect" "$initrd"
		[ "$done" = 0 ] && [ "$failed" = 0 ] && [ "$attempt" = 1 ] || break
		last=$(tr -d '\r' <"$log" | sed -n 's/^VMTEST kernel=[^ ]* check=\([^ ]*\) .*/\1/p' | tail -n 1)
		echo "vmtest: $name did not finish (qemu status $st, after check ${last:-none}); booting it again" >&2
		mv "$log" "$log.1"
		tr -d '\r' <"$log.1" | grep -v '^VMTEST-SEED002\|^VMTEST-X[BO] ' | tail -n 60 >&2
		oops=""
		tr -d '\r' <"$log.1" | grep -q 'Oops:\|Kernel panic' && oops="kernel-oops,"
		retry="VMTEST kernel=$name check=guest result=RETRY detail=${oops}first-boot-stopped-after-${last:-none},qemu-status-$st"
	done
	tr -d '\r' <"$log" | grep '^VMTEST ' | grep -v ' done' >>"$out/results" || true
	xarch "$name"
	echo "VMTEST kernel=$name check=wall result=$((t1 - t0))s detail=" >>"$out/results"
	if [ $done = 0 ] || [ $failed = 1 ] || grep -q "^VMTEST kernel=$name check=xarch result=FAIL" "$out/results"; then
		echo "vmtest: $name failed (qemu status $st, $((t1 - t0))s); console tail:" >&2
		tr -d '\r' <"$log" | grep -v '^VMTEST-X[BO] ' | tail -n 40 >&2
	fi
	# a guest that did not finish (panic, hang, timeout: status 124) fails.
	if [ $done = 0 ]; then
		echo "VMTEST kernel=$name check=guest result=FAIL detail=qemu-status-$st" >>"$out/results"
	elif [ -n "$retry" ]; then
		echo "$retry" >>"$out/results"
	fi
done <"$out/rows"
total=$(($(date +%s) - start))

# The table: one row per kernel, one column per check.
awk -v total="$total" '
	{
		k = ""; c = ""; r = ""
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "kernel") k = kv[2]
			else if (kv[1] == "check") c = kv[2]
			else if (kv[1] == "result") r = kv[2]
		}
		if (!(k in seenk)) { seenk[k] = 1; ks[++nk] = k }
		if (c != "wall" && !(c in seenc)) { seenc[c] = 1; cs[++nc] = c }
		res[k, c] = r
		if (r == "FAIL") bad = 1
	}
	END {
		cs[++nc] = "wall"
		printf "%-10s", "kernel"
		for (j = 1; j <= nc; j++) printf " %-10s", cs[j]
		printf "\n"
		for (i = 1; i <= nk; i++) {
			printf "%-10s", ks[i]
			for (j = 1; j <= nc; j++) {
				v = "-"
				if ((ks[i], cs[j]) in res) v = res[ks[i], cs[j]]
				printf " %-10s", v
			}
			printf "\n"
		}
		printf "total wall time: %ds\n", total
		exit bad
	}' "$out/results" && ok=1 || ok=0
# Time to ready per kernel (the ready check's detail: setup_ms of 3 runs),
# and the cost check's k:/f: ratio.
sed -n 's/^VMTEST kernel=\([^ ]*\) check=ready result=[A-Z]* detail=/time to ready on \1: /p' "$out/results" | tr ',' ' '
sed -n 's/^VMTEST kernel=\([^ ]*\) check=cost result=[A-Z]* detail=\([^,]*,[^,]*,[^,]*\),.*/cost per event on \1: \2/p' "$out/results"
grep 'result=FAIL' "$out/results" >&2 || true
[ "$ok" = 1 ]
