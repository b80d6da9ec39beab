package resolve

import (
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

// buildProbes builds record's testdata/probes.c, the program with USDT
// probes and functions that the listing tests list.
func buildProbes(tb testing.TB) string {
	return testutil.BuildC(tb, "../testdata/probes.c", "probes")
}
