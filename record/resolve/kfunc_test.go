package resolve

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

func TestLookupKernelFunc(t *testing.T) {
	testutil.RequireBTF(t)
	fn, err := LookupKernelFunc("vfs_read")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fn.Args(), "args file (struct file *), buf (char *), count (size_t), pos (loff_t *)"; got != want {
		t.Errorf("vfs_read: %s, want %s", got, want)
	}
	if fn.Return != "ssize_t" || fn.Module != "" {
		t.Errorf("vfs_read returns %q, module %q", fn.Return, fn.Module)
	}
	if fn, err := LookupKernelFunc("schedule"); err != nil || fn.Args() != "no args (it takes none)" {
		t.Errorf("schedule: %+v, %v", fn, err)
	}
	_, err = LookupKernelFunc("vfs_raed")
	if err == nil || !strings.Contains(err.Error(), `no kernel function "vfs_raed"`) || !strings.Contains(err.Error(), `did you mean "vfs_read"`) {
		t.Errorf("typo: %v", err)
	}
	// A type name is no function.
	if _, err := LookupKernelFunc("task_struct"); err == nil {
		t.Error("task_struct is a function?")
	}
}
