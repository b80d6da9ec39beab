#!/bin/sh
# gen-proto.sh [OUT_DIR]: regenerates the Go code of the vendored Perfetto
# protos (testdata/third_party/perfetto) into replay/perfetto/internal/perfettopb,
# or into OUT_DIR: protoc (Debian's protobuf-compiler, which
# `scripts/deps.sh clang` installs) with protoc-gen-go built from the module
# cache at the version go.mod requires, so that the output depends only on
# those two versions. Every .proto goes to one Go package.
set -eu
cd "$(dirname "$0")/.."
pkg=github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb
src=testdata/third_party/perfetto
out=${1:-replay/perfetto/internal/perfettopb}
command -v protoc >/dev/null || { echo "gen-proto.sh: protoc is missing: run 'sh scripts/deps.sh clang' as root" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${GO:-go} build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
files=$(cd "$src" && find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
maps=""
for f in $files; do
	maps="$maps --go_opt=M$f=$pkg;perfettopb"
done
mkdir -p "$tmp/out"
# shellcheck disable=SC2086
protoc --plugin=protoc-gen-go="$tmp/protoc-gen-go" -I "$src" \
	--go_out="$tmp/out" --go_opt=module=$pkg $maps $files
mkdir -p "$out"
rm -f "$out"/*.pb.go
cp "$tmp"/out/*.pb.go "$out"/
