package record

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/record/resolve"
)

// attacher holds what attaching one attachment after the other shares:
// the opened executables, the programs per tracepoint, and the kprobes
// gathered into kprobe_multi links.
type attacher struct {
	r            *recorder
	execs        map[string]*link.Executable
	onTracepoint map[string]int // attachments so far, by tracepoint
	uprobePID    int
	// A pattern's kprobes share one kprobe_multi link where the kernel
	// has them (multi): attaching is then one call, not one perf event
	// each.
	multi       bool
	kmulti      map[kmultiKey]*link.KprobeMultiOptions
	kmultiOrder []kmultiKey
}

// kmultiKey groups a pattern's kprobes (or kretprobes) into one
// kprobe_multi link.
type kmultiKey struct {
	pattern string
	ret     bool
}

// attach stores each attachment's spec, then attaches it; its index is
// the attachment's spec index (its cookie, or its program's constant on
// kernels without cookies: see bpf.Objects.Cookies).
func (r *recorder) attach() error {
	at := &attacher{r: r, execs: map[string]*link.Executable{}, onTracepoint: map[string]int{}, uprobePID: r.target,
		multi: !r.opts.NoKprobeMulti && r.objs.Cookies() && bpf.HaveKprobeMulti(), kmulti: map[kmultiKey]*link.KprobeMultiOptions{}}
	if r.follow {
		at.uprobePID = 0 // system-wide, filtered by the programs
	}
	cookie := uint32(0)
	for _, p := range r.probes {
		for k := range p.Atts {
			a := &p.Atts[k]
			if err := r.objs.PutSpec(cookie, &a.Spec); err != nil {
				return err
			}
			switch {
			case a.Hz != 0:
				if err := r.attachProfile(a, cookie); err != nil {
					return err
				}
			case a.Category == "" && !a.Tracing && a.KFunc != "" && a.Pattern != "" && at.multi:
				at.addMulti(a, cookie) // attached by attachMulti
			default:
				l, err := at.link(a, cookie)
				if err != nil {
					return fmt.Errorf("attach %s: %w", a.What, err)
				}
				r.links = append(r.links, l)
			}
			cookie++
		}
	}
	if err := at.attachMulti(); err != nil {
		return err
	}
	if r.follow {
		return r.startFollowing()
	}
	return nil
}

// link attaches a tracepoint, fentry, fexit, kprobe or uprobe with the
// program of spec index cookie.
func (at *attacher) link(a *resolve.Attachment, cookie uint32) (link.Link, error) {
	objs := at.r.objs
	switch {
	case a.Category != "":
		// Each probe on a tracepoint needs a program of its own.
		tp := a.Category + ":" + a.Event
		prog, c, err := objs.TracepointProgram(cookie, at.onTracepoint[tp])
		if err != nil {
			return nil, err
		}
		at.onTracepoint[tp]++
		return link.Tracepoint(a.Category, a.Event, prog, &link.TracepointOptions{Cookie: c})
	case a.Tracing:
		// fentry/fexit: a program of its own, loaded for kfunc.
		prog, err := objs.FuncProgram(cookie, a.KFunc, a.Ret)
		if err != nil {
			return nil, err
		}
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case a.KFunc != "":
		// Kprobes fire in every process: the programs filter by
		// FilterTgid or the followed processes.
		prog, c, err := objs.UprobeProgram(cookie)
		if err != nil {
			return nil, err
		}
		ko := &link.KprobeOptions{Cookie: c, Offset: a.KprobeOff}
		if a.Ret {
			return link.Kretprobe(a.KFunc, prog, ko)
		}
		return link.Kprobe(a.KFunc, prog, ko)
	}
	return at.uprobe(a, cookie)
}

// uprobe attaches a uprobe or uretprobe, opening its executable once.
func (at *attacher) uprobe(a *resolve.Attachment, cookie uint32) (link.Link, error) {
	ex := at.execs[a.Path]
	if ex == nil {
		var err error
		if ex, err = link.OpenExecutable(a.Path); err != nil {
			return nil, err
		}
		at.execs[a.Path] = ex
	}
	prog, c, err := at.r.objs.UprobeProgram(cookie)
	if err != nil {
		return nil, err
	}
	uo := &link.UprobeOptions{Address: a.Addr, Cookie: c, PID: at.uprobePID, RefCtrOffset: a.RefCtr}
	var l link.Link
	if a.Ret {
		l, err = ex.Uretprobe("", prog, uo)
	} else {
		l, err = ex.Uprobe("", prog, uo)
	}
	err = uprobeConflict(err, a.Path)
	if errors.Is(err, unix.ESRCH) && at.uprobePID != 0 {
		err = fmt.Errorf("process %d exited before recording started: %w", at.uprobePID, err)
	}
	return l, err
}

// addMulti adds a kprobe of a pattern to its pattern's kprobe_multi link.
func (at *attacher) addMulti(a *resolve.Attachment, cookie uint32) {
	k := kmultiKey{a.Pattern, a.Ret}
	if at.kmulti[k] == nil {
		at.kmultiOrder = append(at.kmultiOrder, k)
		at.kmulti[k] = &link.KprobeMultiOptions{}
	}
	at.kmulti[k].Symbols = append(at.kmulti[k].Symbols, a.KFunc)
	at.kmulti[k].Cookies = append(at.kmulti[k].Cookies, uint64(cookie))
}

// attachMulti attaches the kprobe_multi links addMulti gathered, one per
// pattern.
func (at *attacher) attachMulti() error {
	r := at.r
	for _, k := range at.kmultiOrder {
		prog, err := r.objs.KprobeMultiProgram()
		if err != nil {
			return err
		}
		o := at.kmulti[k]
		var l link.Link
		if k.ret {
			l, err = link.KretprobeMulti(prog, *o)
		} else {
			l, err = link.KprobeMulti(prog, *o)
		}
		if err != nil {
			return fmt.Errorf("attach the kprobes of pattern %s (%d functions, one kprobe_multi link): %w", k.pattern, len(o.Symbols), err)
		}
		r.links = append(r.links, l)
		r.kmultiLinks++
	}
	return nil
}

// attachProfile opens a CPU-clock perf event on every CPU with the profile
// program of spec index spec: the programs then filter by process, as
// BCC's profile does with -p. A CPU that is offline (ENODEV) is skipped.
func (r *recorder) attachProfile(a *resolve.Attachment, spec uint32) error {
	prog, err := r.objs.PerfEventProgram(spec)
	if err != nil {
		return fmt.Errorf("attach %s: %w", a.What, err)
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("attach %s: %w", a.What, err)
	}
	n := 0
	for cpu := range ncpu {
		l, err := bpf.AttachPerfEvent(prog, cpu, a.Hz)
		if errors.Is(err, unix.ENODEV) {
			continue
		}
		if err != nil {
			return fmt.Errorf("attach %s: %w", a.What, err)
		}
		r.perfLinks = append(r.perfLinks, l)
		n++
	}
	if n == 0 {
		return fmt.Errorf("attach %s: no CPU is online", a.What)
	}
	return nil
}

// detach closes the capture window, then every link. Closing a uprobe link
// takes about 90 ms on this kernel (the uprobe unregistration waits for RCU
// grace periods under a global lock, so closing them in parallel does not
// help): without the window, the probes closed last would record for
// seconds longer than the first.
func (r *recorder) detach() {
	r.disarm()
	r.limiter.close()
	r.limiter = nil
	for _, l := range r.links {
		l.Close()
	}
	r.links = nil
	for _, l := range r.perfLinks {
		l.Close()
	}
	r.perfLinks = nil
	if r.forks != nil {
		r.forks.Close()
		r.forks = nil
	}
}

// arm opens the capture window once every probe is attached and the
// capture was started: the window starts at its start time, read before.
func (r *recorder) arm() error {
	// The rate limits' first tokens are there when the window opens.
	r.limiter = startRateLimiter(r.objs, r.rates)
	// The window's start is read just before the programs see it open,
	// not when the metadata was made (before the writer, kallsyms and the
	// mappings were ready: under load, tens of ms in which no probe
	// recorded): every event is inside the window, which holds as little
	// time as it can in which none could be. The file's header keeps the
	// earlier time; its footer has this one.
	start := boottime.Now()
	if err := r.objs.Arm(true); err != nil {
		return err
	}
	r.w.Meta().Window.Start = start
	r.window.Start = start
	return nil
}

// disarm closes the capture window if it is open; the window ends at the
// boot time read just after. Events whose program saw the window open
// still reach the ring: the drainer reads them.
func (r *recorder) disarm() {
	if r.objs == nil || r.window.Start == 0 || r.window.End != 0 {
		return
	}
	if err := r.objs.Arm(false); err != nil {
		r.warn(err.Error())
		return
	}
	r.window.End = boottime.Now()
	if r.d != nil {
		// Loss counts read from now on carry the end: a read between
		// the disarm and here came before it, when the window was open.
		r.d.windowEnd.Store(r.window.End)
	}
	if m := r.w.Meta(); m.Window != nil {
		m.Window.End = r.window.End
	}
}
