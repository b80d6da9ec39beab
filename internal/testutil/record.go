package testutil

import (
	"os"
	"testing"
)

// KernelBTF is the kernel's own BTF, which fentry, fexit and kernel
// expressions are resolved against.
const KernelBTF = "/sys/kernel/btf/vmlinux"

// RequireBTF skips the test unless the kernel exposes its BTF at
// KernelBTF. It skips even if Strict: the project supports kernels built
// without BTF.
func RequireBTF(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(KernelBTF); err != nil {
		tb.Skipf("skipping: no kernel BTF: %v", err)
	}
}
