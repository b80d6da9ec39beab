package host

import (
	"testing"

	"github.com/bpftape/bpftape/record/kallsyms"
)

// TestKernelTextSymbols reads this kernel's kallsyms: the functions a
// kprobe can name, against which a mistyped or inlined one is caught.
func TestKernelTextSymbols(t *testing.T) {
	syms := KernelTextSymbols()
	if syms == nil {
		t.Fatalf("no text symbols in %s", kallsyms.Path)
	}
	for _, fn := range []string{"vfs_read", "do_sys_openat2"} {
		if !syms[fn] {
			t.Errorf("%s not among %d text symbols", fn, len(syms))
		}
	}
	if syms["vfs_raed"] {
		t.Error("vfs_raed is a kernel function?")
	}
}
