#!/usr/bin/env bash
# deps.sh HEADERS_DIR: installs, only when missing, what `make bench` runs
# (perf, bpftrace, BCC and its tools (profile), gcc, sys/sdt.h, objdump) and Debian's kernel headers
# for BCC, merged from the -amd64 and -common packages into HEADERS_DIR
# (bench.sh points BCC_KERNEL_SOURCE there: this kernel has no
# /lib/modules/$(uname -r)/build).
set -euo pipefail
headers=${1:?usage: deps.sh HEADERS_DIR}
hver=6.1.0-56
pkgs="linux-perf bpftrace python3-bpfcc bpfcc-tools gcc systemtap-sdt-dev binutils linux-headers-$hver-amd64 linux-headers-$hver-common"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "bench: installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The -amd64 package holds the generated headers and the config, -common
# the sources' include trees; BCC wants one tree. Rebuilt when the
# packages' versions change.
stamp=$(dpkg-query -W -f='${Version}' "linux-headers-$hver-amd64" "linux-headers-$hver-common")
if [ "$(cat "$headers/.bench-stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "bench: merging kernel headers into $headers" >&2
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
