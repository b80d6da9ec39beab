//go:build linux && amd64

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestRecordFilterInfo records with a typed pointer chain and a filter
// through the command line, and checks what info and hist say of the
// capture: that it is a filtered subset, the filter, the events it
// rejected, and that the kept events are the ones the workload printed
// with a size of at least 4096.
func TestRecordFilterInfo(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := testutil.BuildC(t, "../../testdata/exprs/exprs.c", "exprs", "-O2", "-g")
	out := filepath.Join(t.TempDir(), "f.arrow")
	// The -c command's output goes to the recorder's own stdout; the
	// workload prints the same calls on every run.
	truth, err := exec.Command(exe, "40").Output()
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "record", "-o", out, "-c", exe+" 40",
		"big=u:"+exe+":rx(size, req->hdr.size)/size >= 4096/")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	kept, rejected := 0, 0
	for _, l := range strings.Split(string(truth), "\n") {
		if f := strings.Fields(l); len(f) == 13 && f[0] == "rx" {
			if testutil.Atoi(t, f[2]) >= 4096 {
				kept++
			} else {
				rejected++
			}
		}
	}
	if kept+rejected != 40 {
		t.Fatalf("workload printed %d calls, want 40:\n%s", kept+rejected, truth)
	}
	info, stderr, code := runCLI(t, "info", out)
	if code != 0 {
		t.Fatalf("info: exit %d\n%s", code, stderr)
	}
	for _, re := range []string{
		`(?m)^filtered: +a subset: 1 of 1 probes recorded only the events their filter passed`,
		`(?m)^big +uprobe +` + fmt.Sprint(kept) + ` +0 `,
		`fields size uint32, req->hdr.size uint32`,
		`filter size >= 4096: ` + fmt.Sprint(rejected) + ` more events were filtered out in the kernel`,
	} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("info lacks %s:\n%s", re, info)
		}
	}
	hist, _, code := runCLI(t, "hist", out, "big", "req->hdr.size")
	if code != 0 || !strings.Contains(hist, "req->hdr.size") {
		t.Errorf("hist on an expression field: exit %d\n%s", code, hist)
	}
	t.Logf("kept %d, rejected %d", kept, rejected)
}
