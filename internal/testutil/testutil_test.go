package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeTB records whether a helper skipped or failed the test, ending the
// goroutine as testing.T does.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// outcome runs require on a fakeTB and says what it did: "skip", "fail"
// or "run".
func outcome(t *testing.T, require func(testing.TB)) string {
	t.Helper()
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		require(f)
	}()
	<-done
	switch {
	case f.failed:
		t.Logf("failed: %s", f.msg)
		return "fail"
	case f.skipped:
		t.Logf("skipped: %s", f.msg)
		return "skip"
	}
	return "run"
}

// TestRequireStrict: with StrictEnv set, what a test needs and lacks fails
// it; without, it skips it.
func TestRequireStrict(t *testing.T) {
	missing := func() error { return errors.New("kernel lacks BPF_MAP_TYPE_RINGBUF") }
	present := func() error { return nil }
	root := os.Geteuid() == 0
	for _, strict := range []string{"", "0", "1"} {
		t.Setenv(StrictEnv, strict)
		lacking, want := "skip", "run"
		if strict == "1" {
			lacking = "fail"
		}
		if !root {
			want = lacking
		}
		if got := outcome(t, func(tb testing.TB) { RequireBPF(tb, missing) }); got != lacking {
			t.Errorf("%s=%q, features missing: RequireBPF did %s, want %s", StrictEnv, strict, got, lacking)
		}
		if got := outcome(t, func(tb testing.TB) { RequireBPF(tb, present) }); got != want {
			t.Errorf("%s=%q, features present, root %v: RequireBPF did %s, want %s", StrictEnv, strict, root, got, want)
		}
		if got := outcome(t, func(tb testing.TB) { RequireRoot(tb, "testing") }); got != want {
			t.Errorf("%s=%q, root %v: RequireRoot did %s, want %s", StrictEnv, strict, root, got, want)
		}
		if got := outcome(t, func(tb testing.TB) { Unavailable(tb, "no %s", "gcc") }); got != lacking {
			t.Errorf("%s=%q: Unavailable did %s, want %s", StrictEnv, strict, got, lacking)
		}
	}
}

func TestBuildC(t *testing.T) {
	src := t.TempDir() + "/prog.c"
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { printf(\"%d\\n\", VALUE); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := BuildC(t, src, "prog", "-DVALUE=42")
	out, err := exec.Command(exe).Output()
	if err != nil || string(out) != "42\n" {
		t.Errorf("built program printed %q, %v", out, err)
	}
	// CFlags has -Werror: an unused variable fails the build.
	bad := t.TempDir() + "/bad.c"
	if err := os.WriteFile(bad, []byte("int main(void) { int unused; return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CompileC(t.TempDir()+"/bad", bad); err == nil || !strings.Contains(err.Error(), "unused") {
		t.Errorf("CompileC of a warning: %v", err)
	}
}

func TestCPUTime(t *testing.T) {
	c0 := CPUTime()
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) { // burn CPU
	}
	if c1 := CPUTime(); c1 <= c0 {
		t.Errorf("CPUTime did not advance over a 20ms spin: %v then %v", c0, c1)
	}
}

func TestAtoi(t *testing.T) {
	if v := Atoi(t, "-1234567890123"); v != -1234567890123 {
		t.Errorf("Atoi = %d", v)
	}
}
