#!/bin/sh
# deps.sh [clang|demo|vmtest|vmbench]: installs, only when missing, the Debian packages and npm
# modules bpftape's tests use: gcc, clang, binutils and sys/sdt.h to build
# the workloads (the USDT torture test compares gcc's and clang's operands;
# objcopy and strip make stripped binaries with debug files), BCC and
# bpftrace to check that bpftape prints what they print, and nodejs-polars
# and DuckDB as independent readers, Chromium to render the HTML report,
# e2fsprogs for the ext4 file system the I/O error test shuts down.
# With "clang", the BPF toolchain that
# `make generate` needs; with "demo", what `make demo` builds its workload
# with (gcc and sys/sdt.h); with "vmtest", what `make vmtest` boots its
# guests with (QEMU, a static busybox, gcc for the static workloads, xz and
# zstd for compressed kernel modules); with "vmbench", those and bpftrace,
# which `make vmbench` copies into its guest.
set -eu
cd "$(dirname "$0")/.."

pkgs="gcc clang binutils systemtap-sdt-dev python3-bpfcc bpftrace nodejs npm chromium e2fsprogs"
case "${1:-}" in
clang) pkgs="clang llvm libbpf-dev" ;;
demo) pkgs="gcc libc6-dev systemtap-sdt-dev" ;;
vmtest) pkgs="qemu-system-x86 busybox-static gcc libc6-dev systemtap-sdt-dev xz-utils zstd" ;;
vmbench) pkgs="qemu-system-x86 busybox-static gcc libc6-dev xz-utils zstd bpftrace" ;;
esac

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# node and npm may come from elsewhere than Debian.
case "$missing" in *nodejs*) command -v node >/dev/null && missing=$(echo "$missing" | sed 's/ nodejs//');; esac
case "$missing" in *npm*) command -v npm >/dev/null && missing=$(echo "$missing" | sed 's/ npm//');; esac
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "missing packages:$missing (install them as root)" >&2
		exit 1
	fi
	echo "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
[ -n "${1:-}" ] || sh testdata/interop/install.sh
