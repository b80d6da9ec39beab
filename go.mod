module github.com/bpftape/bpftape

go 1.26

require (
	github.com/apache/arrow/go/v15 v15.0.2
	github.com/cilium/ebpf v0.22.0
	github.com/google/flatbuffers v23.5.26+incompatible
	github.com/klauspost/compress v1.20.3
	github.com/pierrec/lz4/v4 v4.1.18
	golang.org/x/sys v0.43.0
)

require (
	github.com/goccy/go-json v0.10.2 // indirect
	github.com/klauspost/cpuid/v2 v2.2.5 // indirect
	github.com/zeebo/xxh3 v1.0.2 // indirect
	golang.org/x/exp v0.0.0-20231006140011-7918f672742d // indirect
	golang.org/x/mod v0.31.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/telemetry v0.0.0-20251203150158-8fff8a5912fc // indirect
	golang.org/x/tools v0.40.1-0.20260108161641-ca281cf95054 // indirect
	golang.org/x/xerrors v0.0.0-20220907171357-04be3eba64a2 // indirect
)
