// Package testutil holds the helpers that the tests of several packages
// share: privilege and kernel checks, building the C workloads, clocks.
// Only _test.go files import it (internal/layering checks that), as with
// cilium/ebpf's internal/testutil.
package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// StrictEnv is the environment variable that makes a missing requirement
// of a test a failure instead of a skip. The Makefile's test target sets it:
// make test runs as root on a kernel the project supports, where a test
// that skips for want of root, BPF or gcc hides a broken check.
const StrictEnv = "BPFTAPE_REQUIRE_BPF"

// Strict reports whether StrictEnv is set to something other than "" or
// "0".
func Strict() bool {
	v := os.Getenv(StrictEnv)
	return v != "" && v != "0"
}

// Unavailable skips the test, or fails it if Strict, saying why with a
// message formatted as fmt.Sprintf does.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		tb.Fatalf("%s (%s is set: this must run here)", msg, StrictEnv)
	}
	tb.Skipf("skipping: %s", msg)
}

// RequireRoot skips the test unless it runs as root, or fails it if
// Strict; what says what needs root ("recording", "mknod").
func RequireRoot(tb testing.TB, what string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Unavailable(tb, "%s needs root", what)
	}
}

// RequireBPF skips the test, or fails it if Strict, unless it runs as root
// on a kernel that passes features, which is bpf.CheckFeatures: a
// parameter, because package bpf's own tests use this package and it
// cannot import bpf.
func RequireBPF(tb testing.TB, features func() error) {
	tb.Helper()
	RequireRoot(tb, "BPF")
	if err := features(); err != nil {
		Unavailable(tb, "BPF unavailable: %v", err)
	}
}

// CFlags are the flags the C workloads are built with: probed functions
// start with push %rbp, which uprobes emulate (anything else is
// single-stepped, an order of magnitude slower), and a warning fails the
// build.
var CFlags = []string{"-O2", "-fno-omit-frame-pointer", "-fcf-protection=none", "-Wall", "-Werror"}

// CompileC runs gcc with CFlags, then args (sources and more flags, which
// may override CFlags), writing exe.
func CompileC(exe string, args ...string) error {
	argv := append(append(append([]string{}, CFlags...), args...), "-o", exe)
	out, err := exec.Command("gcc", argv...).CombinedOutput()
	if err != nil {
		hint := ""
		if bytes.Contains(out, []byte("sys/sdt.h")) {
			hint = " (sys/sdt.h comes with Debian's systemtap-sdt-dev)"
		}
		return fmt.Errorf("gcc %v%s: %w\n%s", args, hint, err, out)
	}
	return nil
}

// BuildC compiles src (and args, as CompileC takes them) into
// tb.TempDir()/name and returns its path. Without gcc it skips the test,
// or fails it if Strict.
func BuildC(tb testing.TB, src, name string, args ...string) string {
	tb.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		Unavailable(tb, "no gcc")
	}
	exe := filepath.Join(tb.TempDir(), name)
	if err := CompileC(exe, append([]string{src}, args...)...); err != nil {
		tb.Fatal(err)
	}
	return exe
}

// Atoi parses a decimal int64, failing the test if s is not one.
func Atoi(tb testing.TB, s string) int64 {
	tb.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
