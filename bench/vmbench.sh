#!/bin/sh
# vmbench.sh [KERNEL]: `make vmbench`, the kernel-function rows. The
# host kernel has no kprobes and refuses fentry, so these rows run in one
# QEMU TCG guest (KERNEL from scripts/vmtest/kernels, default 6.12;
# VMBENCH_CPUS vCPUs, default 1: the recorder's CPU comes out of the
# workload's, as in make bench's 2T rows; with 2 the workload is pinned to
# the last, as in its 1T rows, but MTTCG made the bare loop vary 1.1-2.0
# µs a read between rounds): bpftape, bpftrace (the host's, with its shared libraries) and the
# empty program (bench/driver empty) on vfs_read's kprobe, kretprobe, fentry
# and fexit, alternating in rounds (bench/vmguest.sh). TCG inflates absolute
# times many fold, so the table's results are ratios within this one run.
# VMBENCH_N (reads per run, default 100000) and VMBENCH_ROUNDS (default 5)
# size it; the guest's console is kept in out/vmbench/KERNEL.log.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
kernel=${1:-6.12}
cache=${VMTEST_CACHE:-/var/cache/bpftape-vmtest}
out=${VMBENCH_OUT:-$root/out/vmbench}
n=${VMBENCH_N:-100000}
rounds=${VMBENCH_ROUNDS:-5}
timeout=${VMBENCH_TIMEOUT:-3600}
cpus=${VMBENCH_CPUS:-1}

mkdir -p "$out"
grep -v '^#' "$root/scripts/vmtest/kernels" | awk -v k="$kernel" '$1 == k' >"$out/kernels"
if [ ! -s "$out/kernels" ]; then
	echo "vmbench: no kernel $kernel in scripts/vmtest/kernels" >&2
	exit 2
fi
sh "$root/scripts/vmtest/fetch.sh" "$cache" "$out/kernels"

echo "vmbench: building the initramfs (static bpftape, driver, vmwork; bpftrace and its libraries)" >&2
rm -rf "$out/root"
mkdir -p "$out/root/bin" "$out/root/proc" "$out/root/sys" "$out/root/dev" "$out/root/tmp"
(cd "$root" && CGO_ENABLED=0 go build -o "$out/root/bin/bpftape" ./cmd/bpftape)
(cd "$root" && CGO_ENABLED=0 go build -o "$out/root/bin/driver" ./bench/driver)
gcc -O2 -static -fno-omit-frame-pointer -fcf-protection=none -pthread -o "$out/root/bin/vmwork" "$root/testdata/vmtest/vmwork.c"
bt=$(command -v bpftrace)
cp "$bt" "$out/root/bin/bpftrace"
for so in $(ldd "$bt" | grep -o '/[^ ]*'); do
	mkdir -p "$out/root$(dirname "$so")"
	cp -L "$so" "$out/root$so"
done
cp /bin/busybox "$out/root/bin/busybox"
cp "$root/scripts/vmtest/init" "$out/root/init"
cp "$here/vmguest.sh" "$out/root/bin/guest.sh"
chmod 755 "$out/root/init" "$out/root/bin/guest.sh"
(cd "$out/root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out/initramfs.gz")

log="$out/$kernel.log"
echo "vmbench: booting $kernel ($(cat "$cache/$kernel/release")), $cpus vCPU, $rounds rounds of $n reads; console in $log" >&2
t0=$(date +%s)
# The console goes to the log; the guest's VMBENCH lines, as they come, to
# stderr. qemu's status comes back through a file (sh has no pipefail).
{
	st=0
	timeout "$timeout" qemu-system-x86_64 -accel tcg -smp "$cpus" -m 2048 \
		-kernel "$cache/$kernel/vmlinuz" -initrd "$out/initramfs.gz" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 vmbench.kernel=$kernel vmbench.n=$n vmbench.rounds=$rounds" \
		-nographic -no-reboot -monitor none -nic none </dev/null 2>&1 || st=$?
	echo $st >"$out/qemu-status"
} | tee "$log" | tr -d '\r' | grep --line-buffered '^VMBENCH' | sed -u 's/^/vmbench: /' >&2 || true
st=$(cat "$out/qemu-status")
echo "vmbench: guest ran $(($(date +%s) - t0)) s" >&2
if ! tr -d '\r' <"$log" | grep -q "^VMBENCH kernel=$kernel done"; then
	echo "vmbench: the guest did not finish (qemu status $st); console tail:" >&2
	tr -d '\r' <"$log" | tail -n 40 >&2
	exit 1
fi
tr -d '\r' <"$log" | grep '^VMBENCH ' | "$out/root/bin/driver" vmtable
