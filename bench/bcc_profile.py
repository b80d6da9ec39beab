#!/usr/bin/python3
# bcc_profile.py: runs BCC's own profile tool unchanged, telling when it is
# attached.
#
#   /usr/bin/python3 bench/bcc_profile.py TOOL ARGS...
#
# TOOL is BCC's profile script (/usr/share/bcc/tools/profile, or Debian's
# /usr/sbin/profile-bpfcc), run in this interpreter with ARGS as its
# arguments (the bench passes -F HZ -p PID -f). Its own code runs as it is;
# the one addition is "READY" on stderr once its attach_perf_event (the
# per-CPU CPU-clock events) has returned, which the tool itself does not
# print in folded mode. Its stdout (folded stacks with their counts, at
# SIGINT) is left as it is. Needs the kernel headers: BCC_KERNEL_SOURCE
# points to them when /lib/modules has none.
import runpy
import sys

from bcc import BPF


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bcc_profile.py TOOL ARGS...")
    tool = sys.argv[1]
    attach = BPF.attach_perf_event

    def attached(self, *args, **kwargs):
        r = attach(self, *args, **kwargs)
        print("READY", file=sys.stderr, flush=True)
        return r

    BPF.attach_perf_event = attached
    sys.argv = sys.argv[1:]
    runpy.run_path(tool, run_name="__main__")


if __name__ == "__main__":
    main()
