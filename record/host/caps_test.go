package host

import (
	"strings"
	"testing"
)

func TestCheckCaps(t *testing.T) {
	all := uint64(1)<<capBPF | 1<<capPerfmon
	if err := checkCaps(0, all); err != nil {
		t.Error(err)
	}
	if err := checkCaps(1000, 1<<capSysAdmin); err != nil {
		t.Error(err)
	}
	for _, tt := range []struct {
		euid int
		eff  uint64
		want string
	}{
		{0, 1 << capPerfmon, "running as root, but without CAP_BPF ("},
		{0, 1 << capBPF, "running as root, but without CAP_PERFMON ("},
		{1000, 0, "needs root (or CAP_BPF and CAP_PERFMON): running as uid 1000, without CAP_BPF and CAP_PERFMON"},
	} {
		err := checkCaps(tt.euid, tt.eff)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("checkCaps(%d, %#x) = %v, want %q", tt.euid, tt.eff, err, tt.want)
		}
	}
}
