package bpf

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

// TestLostStride loads the programs for 3 probes: the lost counters hold
// probe ids 0 to 2 on every CPU, start at zero, and a spec with probe id 3,
// which would have no counter, is refused.
func TestLostStride(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	objs := load(t, Options{RingSize: 1 << 16, Probes: 3})
	for id := range uint16(4) {
		counts := objs.LostCounts(id, nil)
		if len(counts) != objs.lost.ncpu {
			t.Fatalf("probe %d: %d counters, want one per possible CPU (%d)", id, len(counts), objs.lost.ncpu)
		}
		for cpu, n := range counts {
			if n != 0 {
				t.Errorf("probe %d cpu %d: lost %d before anything ran", id, cpu, n)
			}
		}
	}
	putSpec(t, objs, 0, spec(2, ClassArgs0))
	s := spec(3, ClassArgs0)
	err := objs.PutSpec(1, &s)
	if err == nil || !strings.Contains(err.Error(), "probe id 3 out of range [0,3)") {
		t.Errorf("PutSpec of probe id 3 with Options.Probes 3: %v, want out of range", err)
	}
}
