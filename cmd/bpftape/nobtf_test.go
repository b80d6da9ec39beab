//go:build linux && amd64

package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordWithoutKernelBTF records as on a kernel without
// /sys/kernel/btf/vmlinux (an empty tmpfs over /sys/kernel/btf, in a mount
// namespace of its own): -c records the command's process, with the comm
// read by bpf_get_current_comm, both with and without attach cookies, and
// only warns that it does not follow child processes; -p --follow, which
// needs the BTF, fails with one error that names it.
func TestRecordWithoutKernelBTF(t *testing.T) {
	bin, probes := bpftapeBin(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("skipping: no unshare")
	}
	dir := t.TempDir()
	// hide runs a shell command with the kernel's BTF hidden.
	hide := func(env []string, script string) result {
		t.Helper()
		cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-ec",
			"mount -t tmpfs none /sys/kernel/btf; "+script)
		cmd.Env = append(os.Environ(), env...)
		return runBin(t, cmd)
	}
	if r := hide(nil, "test ! -e /sys/kernel/btf/vmlinux"); r.code != 0 {
		t.Skipf("skipping: cannot hide /sys/kernel/btf/vmlinux (exit %d)", r.code)
	}
	const n = 300
	for _, env := range []string{"BPFTAPE_NO_COOKIES=0", "BPFTAPE_NO_COOKIES=1"} {
		t.Run(env, func(t *testing.T) {
			out := filepath.Join(dir, strings.TrimPrefix(env, "BPFTAPE_NO_COOKIES=")+".arrow")
			r := hide([]string{env}, fmt.Sprintf(`%s record -o %s -c '%s burst %d' 'u:%s:tick(arg0)' 'ur:%s:tick' >/dev/null`, bin, out, probes, n, probes, probes))
			if r.code != 0 || !strings.Contains(r.stderr, "/sys/kernel/btf/vmlinux") || strings.Contains(r.stderr, "panic") {
				t.Fatalf("exit %d; stderr does not warn that the kernel BTF is missing:\n%s", r.code, r.stderr)
			}
			csvOut := filepath.Join(dir, "events.csv")
			if r := runBin(t, exec.Command(bin, "export", out, "--format", "csv", "-o", csvOut, "--force")); r.code != 0 {
				t.Fatalf("export: exit %d", r.code)
			}
			f, err := os.Open(csvOut)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, name := range rows[0] {
				col[name] = i
			}
			count := map[string]int{}
			for _, row := range rows[1:] {
				count[row[col["probe"]]]++
				if row[col["comm"]] != "probes" {
					t.Fatalf("event %v: comm %q, want probes", row, row[col["comm"]])
				}
			}
			if count["tick"] != n || count["tick:return"] != n || len(count) != 2 {
				t.Errorf("events by probe %v, want %d tick and %d tick:return", count, n, n)
			}
		})
	}

	r := hide(nil, fmt.Sprintf(`sleep 3 & %s record -o %s -p $! --follow -d 1s 't:syscalls:sys_exit_write'`, bin, filepath.Join(dir, "follow.arrow")))
	if r.code != 1 || strings.Count(r.stderr, "/sys/kernel/btf/vmlinux") != 1 || strings.Contains(r.stderr, "panic") {
		t.Errorf("--follow without BTF: exit %d, want 1 and one error naming /sys/kernel/btf/vmlinux:\n%s", r.code, r.stderr)
	}
}
