#!/bin/sh
# fetch.sh CACHE [TABLE]: downloads (once) the kernels listed in TABLE
# (default ./kernels) and leaves CACHE/NAME/vmlinuz for each, with the
# loop module (CACHE/NAME/loop.ko, decompressed) for the module checks.
# x86-64's bookworm kernels come through the machine's own apt; other
# suites (bullseye for 5.10) and every arm64 package through a private apt
# state directory under CACHE (CACHE/apt-SUITE, CACHE/apt-SUITE-arm64 with
# APT::Architecture=arm64), so the machine's sources, lists and dpkg
# architectures stay as they are: apt only downloads the .debs, and
# dpkg-deb unpacks them here. When TABLE has an arm64 row, busybox-static's
# arm64 build is fetched the same way, its static busybox left as
# CACHE/busybox-arm64 for the arm64 initramfs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=$1
table=${2:-$here/kernels}
mkdir -p "$cache"
own=$(. /etc/os-release && echo "$VERSION_CODENAME")

# private_apt SUITE ARCH: prints apt-get options for a private state dir
# that holds SUITE's lists for ARCH (amd64 or arm64), updating it the first
# time (or again with a third argument, "update": stale lists may name a
# package the mirror no longer has). arm64's lists cover SUITE,
# SUITE-updates and SUITE-security (bookworm's 6.12 is in the latter two).
private_apt() {
	d="$cache/apt-$1"
	arch=""
	if [ "$2" != amd64 ]; then
		d="$cache/apt-$1-$2"
		arch="-o APT::Architecture=$2 -o APT::Architectures::=$2"
	fi
	opts="$arch -o Dir::Etc::sourcelist=$d/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$d/lists -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o Dir::State::status=$d/status"
	if [ ! -e "$d/updated" ] || [ "${3:-}" = update ]; then
		mkdir -p "$d/lists/partial"
		: >"$d/status"
		key=/usr/share/keyrings/debian-archive-keyring.gpg
		{
			echo "deb [signed-by=$key] http://deb.debian.org/debian $1 main"
			[ "$2" = amd64 ] || echo "deb [signed-by=$key] http://deb.debian.org/debian $1-updates main"
			echo "deb [signed-by=$key] http://deb.debian.org/debian-security $1-security main"
		} >"$d/sources.list"
		apt-get $opts -qq update >&2
		touch "$d/updated"
	fi
	echo "$opts"
}

# download DIR SUITE ARCH PKG: PKG's .deb into DIR.
download() {
	opts=""
	[ "$2" = "$own" ] && [ "$3" = amd64 ] || opts=$(private_apt "$2" "$3")
	echo "vmtest: downloading $4 ($2, $3)" >&2
	(cd "$1" && apt-get $opts -qq download "$4" >&2) && return 0
	# A fresh machine may have no package lists for its own suite yet;
	# a private directory's lists may be stale.
	if [ -z "$opts" ]; then
		apt-get -qq update >&2
	else
		opts=$(private_apt "$2" "$3" update)
	fi
	(cd "$1" && apt-get $opts -qq download "$4" >&2)
}

grep -v '^#' "$table" | while read -r name arch suite pkg _; do
	[ -n "$name" ] || continue
	if [ "$arch" = arm64 ] && [ ! -s "$cache/busybox-arm64" ]; then
		rm -rf "$cache/busybox-arm64.d"
		mkdir -p "$cache/busybox-arm64.d/deb"
		download "$cache/busybox-arm64.d/deb" "$suite" arm64 busybox-static
		dpkg-deb -x "$cache"/busybox-arm64.d/deb/*.deb "$cache/busybox-arm64.d/x"
		cp "$cache/busybox-arm64.d/x/bin/busybox" "$cache/busybox-arm64.tmp"
		rm -rf "$cache/busybox-arm64.d"
		mv "$cache/busybox-arm64.tmp" "$cache/busybox-arm64"
	fi
	out="$cache/$name"
	[ -s "$out/vmlinuz" ] && [ -e "$out/loop.done" ] && continue
	rm -rf "$out/deb"
	mkdir -p "$out/deb"
	download "$out/deb" "$suite" "$arch" "$pkg"
	rm -rf "$out/x"
	dpkg-deb -x "$out"/deb/*.deb "$out/x"
	cp "$out"/x/boot/vmlinuz-* "$out/vmlinuz.tmp"
	basename "$out"/x/boot/vmlinuz-* | sed 's/^vmlinuz-//' >"$out/release"
	# loop.ko, .ko.xz or .ko.zst; absent if the kernel has loop built in.
	rm -f "$out/loop.ko"
	ko=$(find "$out/x/lib/modules" -name 'loop.ko*' | head -n 1)
	case "$ko" in
	*.ko) cp "$ko" "$out/loop.ko" ;;
	*.xz) xz -dc "$ko" >"$out/loop.ko" ;;
	*.zst) zstd -qdc "$ko" >"$out/loop.ko" ;;
	esac
	touch "$out/loop.done"
	rm -rf "$out/x" "$out/deb"
	mv "$out/vmlinuz.tmp" "$out/vmlinuz"
done
