package bpf

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

// TestRateLimit: a probe with a rate limit (SpecRateLimit) records as many
// events as it was given tokens and counts every other one as rate-limited,
// after its filter: an event the filter rejects takes no token and is
// counted as filtered. A probe without one records all. With the whole
// program and with only the code the specs need; with cookies, where a
// rate-limited spec's attachment gets a copy of probe_uprobe_rl, which
// checks the limit first (RateLimitedCopies), or, past their number,
// shares the cookie program, which checks it after the nesting count;
// and with a program per attachment (probe_uprobe_rl for the
// rate-limited ones).
func TestRateLimit(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	const n, tokens = 500, 100
	for _, c := range []struct {
		name      string
		uses      *Uses
		noCookies bool
		noCopies  bool
	}{
		{"whole", nil, false, false},
		{"whole, no copies", nil, false, true},
		{"uses", &Uses{MaxClass: ClassArgs1, Filters: true, RateLimit: true}, false, false},
		{"uses, no copies", &Uses{MaxClass: ClassArgs1, Filters: true, RateLimit: true}, false, true},
		{"no cookies", &Uses{MaxClass: ClassArgs1, Filters: true, RateLimit: true}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := load(t, Options{RingSize: 1 << 20, Uses: c.uses, NoCookies: c.noCookies, Probes: 4})
			if c.noCopies {
				objs.rateCopies = RateLimitedCopies
			}
			limited := spec(1, ClassArgs1, reg(RegDI, 8, true))
			limited.Flags |= SpecRateLimit
			// work's first argument counts 1 to n: the filter passes 300.
			filtered := withFilter(spec(2, ClassArgs1, reg(RegDI, 8, true)), cmp(PredLe, OperandField, 0, true, 300))
			filtered.Flags |= SpecRateLimit
			free := spec(3, ClassArgs1, reg(RegDI, 8, true))
			for _, id := range []uint16{1, 2} {
				if got := objs.AddTokens(id, tokens); got != tokens {
					t.Fatalf("probe %d: %d tokens after adding %d to none", id, got, tokens)
				}
			}
			w := startWorkload(t, exe, "burst", fmt.Sprint(n))
			for i, s := range []ProbeSpec{limited, filtered, free} {
				putSpec(t, objs, uint32(i), s)
				prog, cookie, err := objs.UprobeProgram(uint32(i))
				if err != nil {
					t.Fatal(err)
				}
				// With cookies, only the free spec, or all past the copies, share the program.
				if shared := prog == objs.ProbeUprobe; !c.noCookies && shared != (s.Flags&SpecRateLimit == 0 || c.noCopies) {
					t.Errorf("spec %d (flags %#x): the cookie program is %v", i, s.Flags, shared)
				}
				attachUprobe(t, exe, "work", prog, cookie, w.pid(), false)
			}
			w.run(t)
			rd := newReader(t, objs)
			if err := rd.Flush(); err != nil {
				t.Fatal(err)
			}
			got := map[uint16]uint64{}
			if err := rd.Drain(0, func(raw []byte) error {
				h, err := DecodeHeader(raw)
				if err == nil && h.Class != ClassComm {
					got[h.ProbeID]++
				}
				return err
			}); !errors.Is(err, ErrRingFlushed) {
				t.Fatal(err)
			}
			for _, want := range []struct {
				id                          uint16
				recorded, limited, rejected uint64
			}{{1, tokens, n - tokens, 0}, {2, tokens, 300 - tokens, n - 300}, {3, n, 0, 0}} {
				limited, err := objs.RateLimitedCount(want.id)
				if err != nil {
					t.Fatal(err)
				}
				rejected, err := objs.FilteredSamples(want.id)
				if err != nil {
					t.Fatal(err)
				}
				if got[want.id] != want.recorded || limited != want.limited || rejected != want.rejected {
					t.Errorf("probe %d: %d recorded, %d rate-limited, %d filtered out; want %d, %d, %d",
						want.id, got[want.id], limited, rejected, want.recorded, want.limited, want.rejected)
				}
			}
			for _, id := range []uint16{1, 2} {
				if left := objs.TokensLeft(id); left != 0 {
					t.Errorf("probe %d: %d tokens left, want 0", id, left)
				}
			}
		})
	}
}
