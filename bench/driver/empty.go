package main

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// runEmpty is the empty-program floor: it attaches a BPF program that only
// returns 0 to each probe (u:BIN:FUNC, ur:BIN:FUNC, U:BIN:PROVIDER:NAME,
// t:CATEGORY:EVENT; profile:hz:N: a CPU-clock perf event sampling N times a
// second on every CPU, as BCC's profile, bpftrace's profile and bpftape's
// profile open them; k:FUNC, kr:FUNC, f:FUNC, fr:FUNC: a kernel function's
// kprobe, kretprobe, fentry, fexit), prints READY, and detaches on SIGINT
// or SIGTERM.
// What a traced process pays under it is the cost of the probe mechanism
// itself (breakpoint, uprobe dispatch or timer interrupt, BPF program call)
// with no work in the program: no tool can do less per event.
//
// With -clock first, the program reads the boot clock
// (bpf_ktime_get_boot_ns) and returns: the floor of any tool that stamps
// each event with its time, as a recorder must and an in-kernel histogram
// of a value need not.
func runEmpty(args []string) error {
	insns := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	if len(args) > 0 && args[0] == "-clock" {
		args = args[1:]
		insns = append(asm.Instructions{asm.FnKtimeGetBootNs.Call()}, insns...)
	}
	if len(args) == 0 {
		return errors.New("usage: driver empty [-clock] PROBE...")
	}
	kprobe, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, Instructions: insns, License: "GPL"})
	if err != nil {
		return fmt.Errorf("load empty uprobe program: %w", err)
	}
	defer kprobe.Close()
	tp, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.TracePoint, Instructions: insns, License: "GPL"})
	if err != nil {
		return fmt.Errorf("load empty tracepoint program: %w", err)
	}
	defer tp.Close()
	perfProg, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.PerfEvent, Instructions: insns, License: "GPL"})
	if err != nil {
		return fmt.Errorf("load empty perf event program: %w", err)
	}
	defer perfProg.Close()

	var perfFDs []int
	defer func() {
		for _, fd := range perfFDs {
			unix.Close(fd)
		}
	}()
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	for _, spec := range args {
		p, err := parseProbe(spec)
		if err != nil {
			return err
		}
		var l link.Link
		switch p.kind {
		case "profile":
			fds, err := attachPerfEvents(perfProg, p.hz)
			perfFDs = append(perfFDs, fds...)
			if err != nil {
				return fmt.Errorf("attach %s: %w", spec, err)
			}
			continue
		case "t":
			l, err = link.Tracepoint(p.category, p.event, tp, nil)
		case "k":
			l, err = link.Kprobe(p.fn, kprobe, nil)
		case "kr":
			l, err = link.Kretprobe(p.fn, kprobe, nil)
		case "f", "fr":
			var prog *ebpf.Program
			l, prog, err = attachTracing(p, insns)
			if prog != nil {
				defer prog.Close()
			}
		case "u", "ur", "U":
			ex, err2 := link.OpenExecutable(p.bin)
			if err2 != nil {
				return err2
			}
			opts := &link.UprobeOptions{}
			sym := p.fn
			if p.kind == "U" {
				if opts.Address, err = usdtOffset(p.bin, p.provider, p.name); err != nil {
					return err
				}
				sym = ""
			}
			if p.kind == "ur" {
				l, err = ex.Uretprobe(sym, kprobe, opts)
			} else {
				l, err = ex.Uprobe(sym, kprobe, opts)
			}
		}
		if err != nil {
			return fmt.Errorf("attach %s: %w", spec, err)
		}
		links = append(links, l)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	fmt.Println("READY")
	<-sigs
	return nil
}

// attachPerfEvents opens a CPU-clock perf event sampling hz times a second
// on every online CPU (all processes) and attaches prog to each.
func attachPerfEvents(prog *ebpf.Program, hz int) ([]int, error) {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	var fds []int
	for cpu := range ncpu {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: uint64(hz),
			Bits:   unix.PerfBitFreq | unix.PerfBitDisabled,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if errors.Is(err, unix.ENODEV) {
			continue // offline
		}
		if err != nil {
			return fds, fmt.Errorf("perf_event_open cpu-clock on CPU %d: %w", cpu, err)
		}
		fds = append(fds, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
			return fds, fmt.Errorf("PERF_EVENT_IOC_SET_BPF on CPU %d: %w", cpu, err)
		}
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return fds, fmt.Errorf("PERF_EVENT_IOC_ENABLE on CPU %d: %w", cpu, err)
		}
	}
	if len(fds) == 0 {
		return nil, errors.New("no CPU is online")
	}
	return fds, nil
}

// usdtOffset returns the file offset of the one USDT site PROVIDER:NAME of
// bin (its .note.stapsdt entry), where a uprobe attaches.
func usdtOffset(bin, provider, name string) (uint64, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	notes := f.Section(".note.stapsdt")
	if notes == nil {
		return 0, fmt.Errorf("%s has no USDT notes", bin)
	}
	data, err := notes.Data()
	if err != nil {
		return 0, err
	}
	var baseAddr uint64
	if s := f.Section(".stapsdt.base"); s != nil {
		baseAddr = s.Addr
	}
	var found []uint64
	for len(data) >= 12 {
		nsz, dsz, typ := binary.LittleEndian.Uint32(data), binary.LittleEndian.Uint32(data[4:]), binary.LittleEndian.Uint32(data[8:])
		off := 12
		nameEnd := off + int(nsz)
		descOff := (nameEnd + 3) &^ 3
		descEnd := descOff + int(dsz)
		if descEnd > len(data) {
			break
		}
		owner := strings.TrimRight(string(data[off:nameEnd]), "\x00")
		desc := data[descOff:descEnd]
		data = data[(descEnd+3)&^3:]
		if owner != "stapsdt" || typ != 3 || len(desc) < 24 {
			continue
		}
		pc := binary.LittleEndian.Uint64(desc)
		base := binary.LittleEndian.Uint64(desc[8:])
		strs := strings.Split(string(desc[24:]), "\x00")
		if len(strs) < 2 || strs[0] != provider || strs[1] != name {
			continue
		}
		if baseAddr != 0 {
			pc += baseAddr - base
		}
		found = append(found, pc)
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%s: %d USDT sites %s:%s, want 1", bin, len(found), provider, name)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && found[0] >= p.Vaddr && found[0] < p.Vaddr+p.Memsz {
			return found[0] - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("%s: USDT site %#x is in no executable segment", bin, found[0])
}

// attachTracing loads an empty fentry (f:) or fexit (fr:) program for the
// probe's kernel function and attaches it. The caller keeps the program open
// until it detaches: its fdinfo is where make vmbench reads its run time.
func attachTracing(p probe, insns asm.Instructions) (link.Link, *ebpf.Program, error) {
	at := ebpf.AttachTraceFEntry
	if p.kind == "fr" {
		at = ebpf.AttachTraceFExit
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: at, AttachTo: p.fn, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, nil, fmt.Errorf("load empty %s program: %w", p.kind, err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	return l, prog, err
}
