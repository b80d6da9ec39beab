#!/bin/sh
# run.sh [KERNEL...]: `make vmtest`. Fetches the kernels of ./kernels (cached
# in $VMTEST_CACHE, default /var/cache/bpftape-vmtest), builds static bpftape
# and the static workloads into an initramfs, boots each kernel under QEMU
# TCG (KVM does not work on these hosts) with guest.sh as the checks, and
# prints a kernel × check table. Exits non-zero when a check fails or a
# guest does not finish; such a guest's console tail is printed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${VMTEST_CACHE:-/var/cache/bpftape-vmtest}
out=${VMTEST_OUT:-$root/out/vmtest}
timeout=${VMTEST_TIMEOUT:-900} # a guest's wall time; 6.1-rt (two TCG vCPUs) needs ~530 s with the stack checks
mem=${VMTEST_MEM:-1024}
only="$*"
table=${VMTEST_TABLE:-$here/kernels} # another table, for trying an expectation

sh "$here/fetch.sh" "$cache" "$table"

# The initramfs: busybox, bpftape, the workloads, init and the checks.
rm -rf "$out/root"
mkdir -p "$out/root/bin" "$out/root/proc" "$out/root/sys" "$out/root/dev" "$out/root/tmp"
echo "vmtest: building static bpftape and workloads" >&2
(cd "$root" && CGO_ENABLED=0 go build -o "$out/root/bin/bpftape" ./cmd/bpftape)
cflags="-O2 -static -fno-omit-frame-pointer -fcf-protection=none"
gcc $cflags -o "$out/root/bin/probes" "$root/record/testdata/probes.c"
gcc $cflags -pthread -o "$out/root/bin/vmwork" "$root/testdata/vmtest/vmwork.c"
ln -s vmwork "$out/root/bin/vmt-exec"
# The stack workload at -O0, as its test builds it.
gcc -O0 -static -fno-omit-frame-pointer -fcf-protection=none -o "$out/root/bin/chain" "$root/testdata/stacks/chain.c"
# USDT in a shared library: a dynamic workload, its library, and the host's
# loader and libc at the paths ldd names.
mkdir -p "$out/root/lib/vmtest"
gcc -O2 -fPIC -shared -o "$out/root/lib/vmtest/libvmusdt.so" "$root/testdata/vmtest/libvmusdt.c"
gcc -O2 -o "$out/root/bin/usdtlib" "$root/testdata/vmtest/usdtlib.c" \
	-L"$out/root/lib/vmtest" -lvmusdt -Wl,-rpath,/lib/vmtest
for so in $(ldd "$out/root/bin/usdtlib" | grep -o '/[^ ]*' | grep -v "^$out/"); do
	mkdir -p "$out/root$(dirname "$so")"
	cp -L "$so" "$out/root$so"
done
cp /bin/busybox "$out/root/bin/busybox"
cp "$here/init" "$out/root/init"
cp "$here/guest.sh" "$out/root/bin/guest.sh"
cp "$root/testdata/seed002/examples.sh" "$out/root/bin/seed002.sh"
cp "$root/testdata/seed002/stacks.sh" "$out/root/bin/seed002-stacks.sh"
chmod 755 "$out/root/init" "$out/root/bin/guest.sh"
(cd "$out/root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out/initramfs.gz")

# boot NAME CPUS EXPECT INITRD: one guest, its console in $log; sets st
# (qemu's status), t0 and t1 (its start and end), done (the checks ended)
# and failed (a check failed).
boot() {
	t0=$(date +%s)
	echo "vmtest: booting $1 ($(cat "$cache/$1/release"), $2 vCPU, expect $3)" >&2
	st=0
	timeout "$timeout" qemu-system-x86_64 -accel tcg -smp "$2" -m "$mem" \
		-kernel "$cache/$1/vmlinuz" -initrd "$4" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 rcupdate.rcu_task_stall_timeout=7500 vmtest.kernel=$1 vmtest.expect=$3" \
		-nographic -no-reboot -monitor none -nic none </dev/null >"$log" 2>&1 || st=$?
	t1=$(date +%s)
	done=1
	tr -d '\r' <"$log" | grep -q "^VMTEST kernel=$1 done" || done=0
	failed=0
	tr -d '\r' <"$log" | grep -q "^VMTEST kernel=$1 check=.* result=FAIL" && failed=1
	return 0
}

start=$(date +%s)
: >"$out/results"
grep -v '^#' "$table" | while read -r name suite pkg cpus expect; do
	[ -n "$name" ] || continue
	if [ -n "$only" ]; then
		case " $only " in *" $name "*) ;; *) continue ;; esac
	fi
	log="$out/$name.log"
	retry=""
	# This kernel's loop module, as a second cpio archive after the
	# shared one (the kernel unpacks concatenated archives in order).
	initrd="$out/initramfs.gz"
	if [ -s "$cache/$name/loop.ko" ]; then
		rm -rf "$out/mod" && mkdir -p "$out/mod/lib/modules"
		cp "$cache/$name/loop.ko" "$out/mod/lib/modules/loop.ko"
		(cd "$out/mod" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out/mod.gz")
		cat "$out/initramfs.gz" "$out/mod.gz" >"$out/initramfs-$name.gz"
		initrd="$out/initramfs-$name.gz"
	fi
	# A guest that stops making progress with no check failed (seen on
	# 6.1-rt under TCG: an RCU-tasks grace period that never ends, which
	# the kernel reports after 30 s with its holdout task) is booted once
	# more; the table's guest column says RETRY, and the first console is
	# kept as NAME.log.1 and its tail printed.
	for attempt in 1 2; do
		boot "$name" "$cpus" "$expect" "$initrd"
		[ "$done" = 0 ] && [ "$failed" = 0 ] && [ "$attempt" = 1 ] || break
		last=$(tr -d '\r' <"$log" | sed -n 's/^VMTEST kernel=[^ ]* check=\([^ ]*\) .*/\1/p' | tail -n 1)
		echo "vmtest: $name did not finish (qemu status $st, after check ${last:-none}); booting it again" >&2
		mv "$log" "$log.1"
		tr -d '\r' <"$log.1" | grep -v '^VMTEST-SEED002' | tail -n 60 >&2
		retry="VMTEST kernel=$name check=guest result=RETRY detail=first-boot-stopped-after-${last:-none},qemu-status-$st"
	done
	tr -d '\r' <"$log" | grep '^VMTEST ' | grep -v ' done' >>"$out/results" || true
	echo "VMTEST kernel=$name check=wall result=$((t1 - t0))s detail=" >>"$out/results"
	if [ $done = 0 ] || [ $failed = 1 ]; then
		echo "vmtest: $name failed (qemu status $st, $((t1 - t0))s); console tail:" >&2
		tr -d '\r' <"$log" | tail -n 40 >&2
	fi
	# a guest that did not finish (panic, hang, timeout: status 124) fails.
	if [ $done = 0 ]; then
		echo "VMTEST kernel=$name check=guest result=FAIL detail=qemu-status-$st" >>"$out/results"
	elif [ -n "$retry" ]; then
		echo "$retry" >>"$out/results"
	fi
done
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
		printf "%-8s", "kernel"
		for (j = 1; j <= nc; j++) printf " %-10s", cs[j]
		printf "\n"
		for (i = 1; i <= nk; i++) {
			printf "%-8s", ks[i]
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
# Time to ready per kernel (the ready check's detail: setup_ms of 3 runs).
sed -n 's/^VMTEST kernel=\([^ ]*\) check=ready result=[A-Z]* detail=/time to ready on \1: /p' "$out/results" | tr ',' ' '
grep 'result=FAIL' "$out/results" >&2 || true
[ "$ok" = 1 ]
