package record

import (
	"strconv"
	"testing"

	"github.com/bpftape/bpftape/bpf"
)

// TestNoCookies records every probe kind (uprobe, uretprobe, USDT,
// tracepoint, several probes on one site, every USDT operand form) as on
// kernels without BPF attach cookies, with one program per attachment, and
// checks the exact counts and values of TestDemo, TestTracepoint,
// TestSameSiteTwice and TestTortureClang: make test covers the fallback of
// kernels before 5.15 on any kernel.
func TestNoCookies(t *testing.T) {
	t.Run("demo", func(t *testing.T) { testDemo(t, true) })
	t.Run("tracepoint", func(t *testing.T) { testTracepoint(t, true) })
	t.Run("same site twice", func(t *testing.T) { testSameSiteTwice(t, true) })
	// Every USDT operand form, %fs thread-locals included.
	t.Run("torture clang", func(t *testing.T) { testTortureClang(t, true) })
}

// checkAttachMode checks that a capture says it was recorded with attach
// cookies exactly when the kernel has them and noCookies is not set.
func checkAttachMode(t *testing.T, c *capture, noCookies bool) {
	t.Helper()
	have, err := bpf.HaveAttachCookies()
	if err != nil {
		t.Fatalf("HaveAttachCookies: %v", err)
	}
	if got, want := c.meta.Extra["attach_cookies"], strconv.FormatBool(have && !noCookies); got != want {
		t.Errorf("attach_cookies %q, want %q (kernel has cookies: %v, NoCookies %v)", got, want, have, noCookies)
	}
}
