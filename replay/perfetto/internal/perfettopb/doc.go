// Package perfettopb is the Go code protoc generates from the Perfetto
// protos vendored under testdata/third_party/perfetto (scripts/gen-proto.sh
// writes every other file here; do not edit them): the perfetto package
// builds its trace with these types and writes it with the protobuf
// library, so that the trace is what Perfetto's own definitions say.
package perfettopb
