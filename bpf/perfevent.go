package bpf

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// PerfEventLink is a CPU-clock perf event with a program attached: the
// program runs at each sample. Closing it stops both.
type PerfEventLink struct {
	fd int
}

// ErrSampleRate: the kernel refuses a sampling frequency above its
// kernel.perf_event_max_sample_rate.
var ErrSampleRate = errors.New("sampling frequency above kernel.perf_event_max_sample_rate")

// AttachPerfEvent opens a CPU-clock software event on cpu that samples hz
// times a second (of the CPU's time, as perf's cpu-clock and BCC's profile
// do) and runs prog, a program of PerfEventProgram, at each sample.
// PERF_EVENT_IOC_SET_BPF attaches it, which every kernel bpftape runs on
// has (4.9).
func AttachPerfEvent(prog *ebpf.Program, cpu int, hz uint64) (*PerfEventLink, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: hz,
		Bits:   unix.PerfBitFreq | unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			if max, rerr := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate"); rerr == nil {
				return nil, fmt.Errorf("perf_event_open cpu-clock at %d Hz on CPU %d: %w (%s)", hz, cpu, ErrSampleRate, strings.TrimSpace(string(max)))
			}
		}
		return nil, fmt.Errorf("perf_event_open cpu-clock at %d Hz on CPU %d: %w", hz, cpu, err)
	}
	l := &PerfEventLink{fd: fd}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		l.Close()
		return nil, fmt.Errorf("attach the profile program to CPU %d's perf event: %w", cpu, err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		l.Close()
		return nil, fmt.Errorf("enable CPU %d's perf event: %w", cpu, err)
	}
	return l, nil
}

// Close stops the event and detaches the program.
func (l *PerfEventLink) Close() error {
	if l.fd < 0 {
		return nil
	}
	err := unix.Close(l.fd)
	l.fd = -1
	return err
}

// bitMmapBuildID is perf_event_attr.build_id (Linux 5.12).
const bitMmapBuildID = unix.CBitFieldMaskBit34

// haveMmapBuildID opens a dummy perf event of this process that asks for
// build ids in its mmap records: a kernel before 5.12 refuses the bit it
// does not know (EINVAL).
func haveMmapBuildID() error {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled | unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | bitMmapBuildID,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	switch {
	case err == nil:
		return unix.Close(fd)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.E2BIG):
		return fmt.Errorf("%s: %w (%w)", FeatureMmapBuildID, ebpf.ErrNotSupported, err)
	}
	return fmt.Errorf("%s: perf_event_open: %w", FeatureMmapBuildID, err)
}

// HaveMmapBuildID reports whether perf mmap records can carry the mapped
// file's build id (attr.build_id, Linux 5.12), as the stack table's
// side-band asks. Probed once.
func HaveMmapBuildID() (bool, error) {
	mmapBuildIDOnce.Do(func() { mmapBuildID, mmapBuildIDErr = supported(haveMmapBuildID()) })
	return mmapBuildID, mmapBuildIDErr
}

var (
	mmapBuildIDOnce sync.Once
	mmapBuildID     bool
	mmapBuildIDErr  error
)
