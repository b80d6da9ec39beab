package main

import (
	"fmt"
	"strings"
)

// probe is one probe site, spelled as bpftape spells it without a field
// list: u:BIN:FUNC, ur:BIN:FUNC, U:BIN:PROVIDER:NAME, t:CATEGORY:EVENT,
// profile:hz:N, or a kernel function's k:FUNC, kr:FUNC, f:FUNC, fr:FUNC
// (kprobe, kretprobe, fentry, fexit: the empty program of the guest's
// kernel-function rows, bench/vmbench.sh).
type probe struct {
	kind            string // u, ur, U, t, profile, k, kr, f, fr
	bin, fn         string // u, ur: binary and function; k, kr, f, fr: function
	provider, name  string // U
	category, event string // t
	hz              int    // profile: samples per second per CPU
	// ustack: each tool records the user stack at every event too (the
	// ustack row); the empty program, whose floor this is, does not.
	ustack bool
	// chain: the uprobe's value is arg0->hdr->size, two pointer loads
	// away (bench_req: the chain row), not arg0.
	chain bool
	// rejectAll: bpftape's probe ends in a filter that no event passes
	// (the progtime diagnostic's filtered-out column): what a rejected
	// event costs against the empty program.
	rejectAll bool
	// rateLimited: bpftape records the probe with a rate limit so low
	// (rateLimitedRate) that nearly every event is rejected by it (the
	// progtime diagnostic's rate-limited column): what an event past
	// --max-rate costs against the empty program.
	rateLimited bool
}

// rateLimitedRate is the --max-rate of a rateLimited probe: one event a
// second, of the hundreds of thousands a run fires.
const rateLimitedRate = "1/s"

func parseProbe(s string) (probe, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return probe{}, fmt.Errorf("bad probe %q", s)
	}
	p := probe{kind: kind}
	switch kind {
	case "u", "ur":
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return probe{}, fmt.Errorf("bad probe %q", s)
		}
		p.bin, p.fn = rest[:i], rest[i+1:]
	case "U":
		f := strings.Split(rest, ":")
		if len(f) != 3 {
			return probe{}, fmt.Errorf("bad probe %q", s)
		}
		p.bin, p.provider, p.name = f[0], f[1], f[2]
	case "t":
		f := strings.Split(rest, ":")
		if len(f) != 2 {
			return probe{}, fmt.Errorf("bad probe %q", s)
		}
		p.category, p.event = f[0], f[1]
	case "k", "kr", "f", "fr":
		if rest == "" || strings.Contains(rest, ":") {
			return probe{}, fmt.Errorf("bad probe %q", s)
		}
		p.fn = rest
	case "profile":
		hz, ok := strings.CutPrefix(rest, "hz:")
		if p.hz = int(atoi64(hz)); !ok || p.hz <= 0 {
			return probe{}, fmt.Errorf("bad probe %q", s)
		}
	default:
		return probe{}, fmt.Errorf("bad probe kind in %q", s)
	}
	return p, nil
}

func (p probe) String() string {
	switch p.kind {
	case "u", "ur":
		return p.kind + ":" + p.bin + ":" + p.fn
	case "U":
		return "U:" + p.bin + ":" + p.provider + ":" + p.name
	case "profile":
		return fmt.Sprintf("profile:hz:%d", p.hz)
	case "k", "kr", "f", "fr":
		return p.kind + ":" + p.fn
	}
	return "t:" + p.category + ":" + p.event
}

// value is the recorded field: what each tool puts in its histogram.
func (p probe) bpftapeSpec() string {
	s := p.bpftapeFields()
	if p.rejectAll {
		// No size in the workload's table is this large, no write returns this.
		if p.kind == "t" {
			s += "/ret == -999999/"
		} else {
			s += "/" + strings.TrimSuffix(strings.SplitN(s, "(", 2)[1], ")") + " == 0xffffffffffff/"
		}
	}
	return s
}

func (p probe) bpftapeFields() string {
	switch p.kind {
	case "u":
		if p.ustack {
			return p.String() + "(arg0,ustack)"
		}
		if p.chain {
			return p.String() + "(req->hdr->size)" // typed from the workload's DWARF
		}
		return p.String() + "(arg0)"
	case "profile":
		return p.String() // kstack and ustack of every sample
	case "ur":
		return p.String() + "(retval)"
	case "U":
		return p.String() + "(arg0)"
	}
	return p.String() + "(ret)"
}

func (p probe) bpftrace(i, pid int) string {
	m := fmt.Sprintf("@h%d", i)
	filter := ""
	if pid != 0 {
		filter = fmt.Sprintf("/pid == %d/ ", pid)
	}
	switch p.kind {
	case "u":
		if p.ustack {
			// A count per user stack, as stackcount does; printed at exit
			// as multi-line keys ending in "]: N".
			return fmt.Sprintf("uprobe:%s:%s { @s%d[ustack] = count(); }\n", p.bin, p.fn, i)
		}
		if p.chain {
			// struct req { u64 id; struct hdr *hdr; }, struct hdr { u64 flags; u64 size; }
			return fmt.Sprintf("uprobe:%s:%s { %s = hist(*(uint64 *)(*(uint64 *)(arg0 + 8) + 8)); }\n", p.bin, p.fn, m)
		}
		return fmt.Sprintf("uprobe:%s:%s { %s = hist(arg0); }\n", p.bin, p.fn, m)
	case "profile":
		return fmt.Sprintf("profile:hz:%d %s{ @s%d[ustack, kstack] = count(); }\n", p.hz, filter, i)
	case "ur":
		return fmt.Sprintf("uretprobe:%s:%s { %s = hist(retval); }\n", p.bin, p.fn, m)
	case "U":
		return fmt.Sprintf("usdt:%s:%s:%s { %s = hist(arg0); }\n", p.bin, p.provider, p.name, m)
	}
	return fmt.Sprintf("tracepoint:%s:%s %s{ %s = hist(args->ret); }\n", p.category, p.event, filter, m)
}
