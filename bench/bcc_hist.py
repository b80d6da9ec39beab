#!/usr/bin/python3
# bcc_hist.py: BCC's in-kernel log2 histogram, the way BCC tools (funclatency,
# the virtio-net case study) aggregate: one BPF_HISTOGRAM per probe filled
# with bpf_log2l(value) in the probe, nothing sent to user space per event.
#
#   /usr/bin/python3 bench/bcc_hist.py [--pid PID] [--ustack] [--deref OFFS] PROBE...
#
# PROBE is as bpftape spells it, without field lists:
#   u:BINARY:FUNC            value = arg0 (PT_REGS_PARM1)
#   ur:BINARY:FUNC           value = retval (PT_REGS_RC)
#   U:BINARY:PROVIDER:NAME   value = the USDT probe's first argument
#   t:CATEGORY:EVENT         value = args->ret (sys_exit_* tracepoints)
# --pid keeps only that process's events (checked in the program).
# --deref 8,8: a uprobe's value is not arg0 but what it points to through
# these offsets, each a bpf_probe_read_user of 8 bytes at value + offset
# (the pointer-chain row: arg0->hdr->size).
# --ustack: the stack mode, as BCC's stackcount counts stacks: instead of
# the histogram, each uprobe, uretprobe or USDT probe counts its events by
# user stack, in a BPF_HASH keyed by the stack id that
# BPF_STACK_TRACE's get_stackid(ctx, BPF_F_USER_STACK) returns (a failed
# walk's negative error is a key too); at exit "count PROBE N" is the sum
# of the counts, and each stack follows with its count and its frames'
# addresses (not symbolized: the traced process may be gone by then).
#
# It prints "READY" on stdout once every probe is attached, then waits for
# SIGINT or SIGTERM and prints, per probe, "count PROBE N" (the histogram's
# total) and the histogram, on stdout. Needs the kernel headers:
# BCC_KERNEL_SOURCE points to them when /lib/modules has none.
import argparse
import signal
import sys

from bcc import BPF, USDT


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--ustack", action="store_true")
    ap.add_argument("--deref", default="")
    ap.add_argument("probes", nargs="+")
    a = ap.parse_args()

    filt = ""
    if a.pid:
        filt = "if ((bpf_get_current_pid_tgid() >> 32) != %d) return 0;" % a.pid
    text = ["#include <uapi/linux/ptrace.h>\n"]
    attach = []
    usdts = []
    for i, spec in enumerate(a.probes):
        kind, rest = spec.split(":", 1)
        if a.ustack:
            if kind not in ("u", "ur", "U"):
                sys.exit("bcc_hist.py: --ustack takes uprobes, uretprobes and USDT probes, not %r" % spec)
            text.append("BPF_STACK_TRACE(stacks%d, 16384);\nBPF_HASH(counts%d, int);\n" % (i, i))
            body = "int id = stacks%d.get_stackid(ctx, BPF_F_USER_STACK); counts%d.increment(id);" % (i, i)
        else:
            text.append("BPF_HISTOGRAM(hist%d);\n" % i)
        if kind in ("u", "ur"):
            binary, func = rest.rsplit(":", 1)
            if not a.ustack:
                val = "PT_REGS_PARM1(ctx)" if kind == "u" else "PT_REGS_RC(ctx)"
                reads = ""
                if kind == "u" and a.deref:
                    reads = "".join("bpf_probe_read_user(&v, 8, (void *)(v + %d)); " % int(o) for o in a.deref.split(","))
                body = "u64 v = %s; %shist%d.increment(bpf_log2l(v));" % (val, reads, i)
            text.append("int probe%d(struct pt_regs *ctx) { %s %s return 0; }\n" % (i, filt, body))
            attach.append((kind, binary, func, "probe%d" % i))
        elif kind == "U":
            binary, provider, name = rest.split(":")
            if not a.ustack:
                body = "u64 v = 0; bpf_usdt_readarg(1, ctx, &v); hist%d.increment(bpf_log2l(v));" % i
            text.append("int probe%d(struct pt_regs *ctx) { %s %s return 0; }\n" % (i, filt, body))
            u = USDT(path=binary)
            u.enable_probe(probe="%s:%s" % (provider, name), fn_name="probe%d" % i)
            usdts.append(u)
        elif kind == "t":
            category, event = rest.split(":")
            text.append("TRACEPOINT_PROBE(%s, %s) { %s u64 v = args->ret; hist%d.increment(bpf_log2l(v)); return 0; }\n"
                        % (category, event, filt, i))
        else:
            sys.exit("bcc_hist.py: bad probe %r" % spec)

    b = BPF(text="".join(text), usdt_contexts=usdts)
    for kind, binary, func, fn in attach:
        if kind == "u":
            b.attach_uprobe(name=binary, sym=func, fn_name=fn)
        else:
            b.attach_uretprobe(name=binary, sym=func, fn_name=fn)

    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("READY", flush=True)
    while not stop:
        signal.pause()

    for i, spec in enumerate(a.probes):
        if a.ustack:
            counts, stacks = b["counts%d" % i], b["stacks%d" % i]
            items = sorted(((k.value, v.value) for k, v in counts.items()), key=lambda kv: -kv[1])
            print("count %s %d" % (spec, sum(v for _, v in items)))
            for sid, n in items:
                frames = [] if sid < 0 else ["%#x" % addr for addr in stacks.walk(sid)]
                print("  stack %d: %d %s" % (sid, n, " ".join(frames) if frames else "(error %d)" % sid))
            continue
        h = b["hist%d" % i]
        total = sum(v.value for v in h.values())
        print("count %s %d" % (spec, total))
        h.print_log2_hist("value")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
