#!/bin/sh
# fetch.sh CACHE [TABLE]: downloads (once) the kernels listed in TABLE
# (default ./kernels) and leaves CACHE/NAME/vmlinuz for each, with the
# loop module (CACHE/NAME/loop.ko, decompressed) for the module checks. Bookworm's kernels come through the machine's
# own apt; other suites (bullseye for 5.10) through a private apt state
# directory under CACHE, so the machine's sources and lists stay as they are.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=$1
table=${2:-$here/kernels}
mkdir -p "$cache"
own=$(. /etc/os-release && echo "$VERSION_CODENAME")

# private_apt SUITE: prints apt-get options for a private state dir that
# holds SUITE's lists, updating it the first time.
private_apt() {
	d="$cache/apt-$1"
	opts="-o Dir::Etc::sourcelist=$d/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$d/lists -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o Dir::State::status=$d/status"
	if [ ! -e "$d/updated" ]; then
		mkdir -p "$d/lists/partial"
		: >"$d/status"
		cat >"$d/sources.list" <<-SRC
		deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $1 main
		deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security $1-security main
		SRC
		apt-get $opts -qq update >&2
		touch "$d/updated"
	fi
	echo "$opts"
}

grep -v '^#' "$table" | while read -r name suite pkg _; do
	[ -n "$name" ] || continue
	out="$cache/$name"
	[ -s "$out/vmlinuz" ] && [ -e "$out/loop.done" ] && continue
	mkdir -p "$out/deb"
	opts=""
	[ "$suite" = "$own" ] || opts=$(private_apt "$suite")
	echo "vmtest: downloading $pkg ($suite)" >&2
	# A fresh machine may have no package lists for its own suite yet.
	if ! (cd "$out/deb" && apt-get $opts -qq download "$pkg" >&2); then
		[ -z "$opts" ] || exit 1
		apt-get -qq update >&2
		(cd "$out/deb" && apt-get -qq download "$pkg" >&2)
	fi
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
