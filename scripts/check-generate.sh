#!/bin/sh
# check-generate.sh: regenerates the BPF objects in a scratch copy and fails
# if they differ from the committed ones.
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
