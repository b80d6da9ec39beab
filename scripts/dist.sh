#!/bin/sh
# dist.sh [OS/ARCH...]: `make dist`. Cross-builds release binaries into
# dist/ as bpftape-VERSION-OS-ARCH[.exe], VERSION being the one the binary
# reports: without cgo (static on Linux; on macOS and Windows, as every Go
# binary there, they link only the system's own libraries), -trimpath and
# stripped, then writes dist/SHA256SUMS (sha256sum -c SHA256SUMS checks
# them). It first removes the dist/bpftape-*-*-* and dist/SHA256SUMS of an
# earlier run, nothing else, and writes nowhere but dist/.
#
# The binaries name the commit they were built from (bpftape version): go
# build records it from git, and the linker is given it too, for builds
# whose build info lacks it; outside a git checkout, set COMMIT=SHA. A
# target that fails to build fails dist, and no SHA256SUMS is written.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
fail() {
	echo "make dist: $*" >&2
	exit 1
}
version=$(sed -n 's/^var Version = "\([^"]*\)"$/\1/p' cmd/bpftape/main.go)
case "$version" in "" | *[!0-9A-Za-z.+-]*) fail "no usable 'var Version = \"...\"' in cmd/bpftape/main.go" ;; esac
[ $# -gt 0 ] || fail "no targets: want OS/ARCH, as linux/amd64"
for t in "$@"; do
	case "$t" in
	*/*/* | /* | */ | *[!a-z0-9/]*) fail "bad target $t: want OS/ARCH, as linux/amd64" ;;
	*/*) ;;
	*) fail "bad target $t: want OS/ARCH, as linux/amd64" ;;
	esac
done
[ ! -L dist ] || fail "dist is a symbolic link: it must be a folder of this checkout"
commit=${COMMIT:-}
modified=
when=
case "$commit" in *[!0-9A-Za-z._-]*) fail "COMMIT=$commit: want a commit hash" ;; esac
if [ -z "$commit" ] && [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
	commit=$(git rev-parse HEAD)
	when=$(TZ=UTC0 git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
	if [ -n "$(git status --porcelain)" ]; then modified=true; else modified=false; fi
fi
ldflags="-s -w -X main.buildCommit=$commit -X main.buildModified=$modified -X main.buildTime=$when"
mkdir -p dist
rm -f dist/bpftape-*-*-* dist/SHA256SUMS
files=
for t in "$@"; do
	os=${t%/*}
	arch=${t#*/}
	ext=
	[ "$os" != windows ] || ext=.exe
	f=bpftape-$version-$os-$arch$ext
	echo "GOOS=$os GOARCH=$arch CGO_ENABLED=0 $GO build -buildvcs=auto -trimpath -ldflags '$ldflags' -o dist/$f ./cmd/bpftape"
	GOOS=$os GOARCH=$arch CGO_ENABLED=0 $GO build -buildvcs=auto -trimpath -ldflags "$ldflags" -o "dist/$f" ./cmd/bpftape ||
		fail "$t did not build (the Go error is above); no SHA256SUMS written"
	files="$files $f"
done
if command -v sha256sum >/dev/null; then sum=sha256sum; else sum="shasum -a 256"; fi
# shellcheck disable=SC2086 # files holds names made above, without spaces
(cd dist && $sum $files >SHA256SUMS) || {
	rm -f dist/SHA256SUMS
	fail "$sum failed"
}
echo "dist/SHA256SUMS:"
cat dist/SHA256SUMS
