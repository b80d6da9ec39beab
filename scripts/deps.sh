#!/bin/sh
# deps.sh [clang|demo|vmtest|vmbench|bench HEADERS_DIR]: installs, only when
# missing, the Debian packages and npm modules bpftape's tests use: gcc,
# clang, binutils and sys/sdt.h to build the workloads (the USDT torture
# test compares gcc's and clang's operands; objcopy and strip make stripped
# binaries with debug files), BCC and bpftrace to check that bpftape prints
# what they print, and nodejs-polars and DuckDB as independent readers,
# Chromium to render the HTML report, e2fsprogs for the ext4 file system the
# I/O error test shuts down, Wine (64-bit) and the MinGW-w64 cross-compiler
# to run the Windows build next to the Linux one and compare their output
# (cmd/bpftape/windows_wine_test.go; MinGW builds the DLL Wine 8 lacks), and
# the arm64 cross-compiler with its C library (gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross) for the tests that build arm64 binaries, and
# protoc (protobuf-compiler), which the Perfetto export's tests decode
# their traces with.
# With "clang", the BPF toolchain and protoc, which
# `make generate` needs; with "demo", what `make demo` builds its workload
# with (gcc and sys/sdt.h); with "vmtest", what `make vmtest` boots its
# guests with (QEMU for x86-64 and for arm64, a static busybox, gcc and the
# arm64 cross-compiler and C library for the static workloads, clang for
# the arm64 USDT torture build, xz and zstd for compressed kernel modules;
# the arm64 kernels and busybox come from Debian's archive through a
# private apt directory, scripts/vmtest/fetch.sh, not through this
# machine's dpkg); with "vmbench", the x86-64 ones and bpftrace, which
# `make vmbench` copies into its guest.
# With "bench HEADERS_DIR", what `make bench` (bench/bench.sh) runs: perf,
# bpftrace, BCC and its tools (profile), gcc, sys/sdt.h, objdump, node
# with DuckDB's npm module (the replay verbs' SQL comparison), and
# Debian's kernel headers for BCC, merged from the -amd64 and -common
# packages into HEADERS_DIR (bench.sh points BCC_KERNEL_SOURCE there: this
# kernel has no /lib/modules/$(uname -r)/build).
# Nothing is fetched when everything is in place; it never calls sudo.
set -eu
cd "$(dirname "$0")/.."

target=${1:-}
hver=6.1.0-56 # bench: the kernel headers BCC compiles against
pkgs="gcc clang binutils systemtap-sdt-dev python3-bpfcc bpftrace nodejs npm chromium e2fsprogs wine64 gcc-mingw-w64-x86-64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross protobuf-compiler"
case "$target" in
clang) pkgs="clang llvm libbpf-dev protobuf-compiler" ;;
demo) pkgs="gcc libc6-dev systemtap-sdt-dev" ;;
vmtest) pkgs="qemu-system-x86 qemu-system-arm busybox-static gcc libc6-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross clang systemtap-sdt-dev xz-utils zstd" ;;
vmbench) pkgs="qemu-system-x86 busybox-static gcc libc6-dev xz-utils zstd bpftrace" ;;
bench)
	headers=${2:?usage: deps.sh bench HEADERS_DIR}
	pkgs="linux-perf bpftrace python3-bpfcc bpfcc-tools gcc systemtap-sdt-dev binutils nodejs npm linux-headers-$hver-amd64 linux-headers-$hver-common"
	;;
esac

# note prints progress: bench's on stderr (bench.sh's stdout is its table).
note() {
	if [ "$target" = bench ]; then
		echo "bench: $*" >&2
	else
		echo "$*"
	fi
}

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
	note "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

case "$target" in
"")
	sh testdata/interop/install.sh
	;;
bench)
	sh testdata/interop/install.sh >&2
	# The -amd64 package holds the generated headers and the config,
	# -common the sources' include trees; BCC wants one tree. Rebuilt when
	# the packages' versions change.
	stamp=$(dpkg-query -W -f='${Version}' "linux-headers-$hver-amd64" "linux-headers-$hver-common")
	if [ "$(cat "$headers/.bench-stamp" 2>/dev/null)" != "$stamp" ]; then
		note "merging kernel headers into $headers"
		rm -rf "$headers.tmp"
		mkdir -p "$headers.tmp"
		cp -a "/usr/src/linux-headers-$hver-common/." "$headers.tmp/"
		cp -a --remove-destination "/usr/src/linux-headers-$hver-amd64/." "$headers.tmp/"
		# The packages' relative links into /usr/lib/linux-kbuild-*.
		for l in scripts tools; do
			if [ -L "$headers.tmp/$l" ]; then
				ln -sfn "$(readlink -f "/usr/src/linux-headers-$hver-amd64/$l")" "$headers.tmp/$l"
			fi
		done
		echo "$stamp" >"$headers.tmp/.bench-stamp"
		rm -rf "$headers"
		mv "$headers.tmp" "$headers"
	fi
	;;
esac
