// Package boottime reads the boot clock: CLOCK_BOOTTIME, nanoseconds since
// boot including time suspended. It is the clock of bpf_ktime_get_boot_ns,
// which stamps every event, and of a capture's times.
//
// Now exists on Linux only. Only the recorder reads the boot clock, to
// compare it with the kernel's event times; the analyzer takes every time
// from the capture, and the builds for other systems (which analyse
// captures and do not record) do not import this package. Code that would
// read the clock elsewhere fails to compile instead of reading a clock
// that no event time could be compared with.
package boottime
