package record

import (
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/usage"
)

// TestFentryErrors records fentry and fexit probes on this host, whose
// kernel refuses tracing programs: the recorder refuses them naming what is
// missing (BPF_PROG_TYPE_TRACING), what they would record from BTF and the
// tracepoints close to the function (this kernel has no kprobes either),
// and answers a typo with close kernel function names. The guests of make
// vmtest record them.
func TestFentryErrors(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	testutil.RequireBTF(t)
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
