package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

// TestKeyIntervalHostile runs latency and requests --key, and hist and
// latency --interval and --by, on every forged capture (times at the ends
// of int64, before boot, going back a century; strings of escapes; forged
// stacks): each ends with one of bpftape's exit statuses, never a panic
// or an unbounded run of intervals.
func TestKeyIntervalHostile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range hostile.Captures() {
		if c.Name == "many-hosts" {
			continue // slow, and its host field is what the thread pairing already keys by
		}
		in := filepath.Join(dir, c.Name+".arrow")
		if err := c.Write(in); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"latency", in, "req", "req_ret", "--key", "name"},
			{"latency", in, "req", "req_ret", "--key", "ustack,kstack", "--interval", "1s", "--by", "kstack"},
			{"latency", in, "req", "req_ret", "--interval", "1ms", "--json"},
			{"latency", in, "req", "req_ret", "--interval", "1s", "--by", "comm", "--json"},
			{"requests", in, "req", "arg0", "req_ret", "retval", "--key", "name"},
			{"hist", in, "req", "arg0", "--interval", "1s"},
			{"hist", in, "req", "arg0", "--interval", "1ms", "--by", "comm", "--json"},
			{"hist", in, "req", "arg0", "--interval", "100ms", "--style", "bpftrace", "--by", "pid"},
		} {
			code := run(args, io.Discard, io.Discard)
			if code < 0 || code > exitDiffer {
				t.Errorf("%s: %v: exit %d", c.Name, args[2:], code)
			}
		}
	}
}
