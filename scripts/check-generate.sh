#!/bin/sh
# check-generate.sh: regenerates the BPF objects and the Go code of the
# vendored Perfetto protos in a scratch copy and fails if they differ from
# the committed ones.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z | xargs -0 -I{} cp --parents {} "$tmp"
rm -f "$tmp"/bpf/*_bpfel.o "$tmp"/bpf/*_bpfel.go
(cd "$tmp" && go generate ./bpf/)
for f in $(cd "$tmp" && ls bpf/*_bpfel.o bpf/*_bpfel.go) bpf/*_bpfel.o bpf/*_bpfel.go; do
	if ! cmp -s "$f" "$tmp/$f"; then
		echo "$f does not match bpf/*.c: run 'make generate' and commit the result" >&2
		exit 1
	fi
done
echo "committed BPF objects match their sources"
pb=replay/perfetto/internal/perfettopb
rm -f "$tmp"/$pb/*.pb.go
(cd "$tmp" && sh scripts/gen-proto.sh)
for f in $(cd "$tmp" && ls $pb/*.pb.go) $pb/*.pb.go; do
	if ! cmp -s "$f" "$tmp/$f"; then
		echo "$f does not match testdata/third_party/perfetto: run 'make generate' and commit the result" >&2
		exit 1
	fi
done
echo "committed Perfetto proto code matches its sources"
