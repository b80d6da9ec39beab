//go:build armbe || arm64be || m68k || mips || mips64 || mips64p32 || ppc || ppc64 || s390 || s390x || shbe || sparc || sparc64

package format

// Captures store their columns little-endian, as Arrow does, and the
// reader views them in place (castSlice in project.go), which is right on
// little-endian machines only: every system bpftape builds for (x86-64 and
// arm64 on Linux, macOS and Windows). A big-endian build stops here rather
// than misread every capture.
var _ = theCaptureReaderNeedsALittleEndianMachine
