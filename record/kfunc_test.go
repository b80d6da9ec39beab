package record

import (
	"os"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutils"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/record/kallsyms"
)

func requireBTF(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(btfDir + "/vmlinux"); err != nil {
		t.Skipf("skipping: no kernel BTF: %v", err)
	}
}

func TestLookupKernelFunc(t *testing.T) {
	requireBTF(t)
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

// TestFentryErrors records fentry and fexit probes on this host, whose
// kernel refuses tracing programs: the recorder refuses them naming what is
// missing (BPF_PROG_TYPE_TRACING), what they would record from BTF and the
// tracepoints close to the function (this kernel has no kprobes either),
// and answers a typo with close kernel function names. The guests of make
// vmtest record them.
func TestFentryErrors(t *testing.T) {
	testutils.RequireBPF(t, bpf.CheckFeatures)
	requireBTF(t)
	args := "would record args file (struct file *), buf (char *), count (size_t), pos (loff_t *) from BTF"
	for _, tt := range []struct {
		probe string
		want  []string
	}{
		{"fentry:vfs_read", []string{"probe fentry:vfs_read: ", "kernel function vfs_read exists", "fentry:vfs_read " + args}},
		{"f:do_sys_openat2(str(filename))", []string{"fentry:do_sys_openat2 would record", "t:syscalls:sys_enter_openat2"}},
		{"fr:vfs_read", []string{"fexit:vfs_read " + args + ", and retval (ssize_t)"}},
		{"f:vmlinux:vfs_read", []string{"fentry:vfs_read " + args}},
		{"fentry:vfs_raed", []string{`no kernel function "vfs_raed" in the kernel's BTF`, `did you mean "vfs_read"`}},
		{"fexit:tcp_sendmsgg", []string{`no kernel function "tcp_sendmsgg"`, `"tcp_sendmsg"`}},
	} {
		t.Run(tt.probe, func(t *testing.T) {
			_, err, _ := record(t, Options{Probes: []string{tt.probe}})
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q", w)
				}
			}
			if !strings.Contains(err.Error(), "BPF_PROG_TYPE_TRACING") && !strings.Contains(err.Error(), "no kernel function") {
				t.Errorf("error names neither the missing feature nor the missing function")
			}
			if usage.Is(err) {
				t.Error("a usage error")
			}
		})
	}
}

// TestKernelTextSymbols reads this kernel's kallsyms: the functions a
// kprobe can name, against which a mistyped or inlined one is caught.
func TestKernelTextSymbols(t *testing.T) {
	syms := kernelTextSymbols()
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
