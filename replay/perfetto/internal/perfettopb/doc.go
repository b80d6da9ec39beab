// Package perfettopb is the Go code protoc generates from the Perfetto
// protos vendored under testdata/third_party/perfetto (scripts/gen-proto.sh
// writes every other file here; do not edit them). The perfetto package's
// tests decode every trace it writes with these types and hold its bytes
// to what the protobuf library marshals of them; the package itself writes
// with protowire and does not link them.
package perfettopb
