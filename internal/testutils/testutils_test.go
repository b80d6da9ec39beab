package testutils

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

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

func TestClocks(t *testing.T) {
	b0, c0 := BootNow(), CPUTime()
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) { // burn CPU
	}
	b1, c1 := BootNow(), CPUTime()
	if d := time.Duration(b1 - b0); d < 20*time.Millisecond || d > 10*time.Second {
		t.Errorf("BootNow advanced %v over a 20ms spin", d)
	}
	if c1 <= c0 {
		t.Errorf("CPUTime did not advance over a 20ms spin: %v then %v", c0, c1)
	}
}

func TestAtoi(t *testing.T) {
	if v := Atoi(t, "-1234567890123"); v != -1234567890123 {
		t.Errorf("Atoi = %d", v)
	}
}
