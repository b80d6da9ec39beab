//go:build linux && amd64

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestExportPerfetto records the chain workload's leaf and its return
// with leaf's user stack, exports a Perfetto trace and decodes it with
// protoc against Perfetto's own protos: a slice per call bpftape latency
// counts (and the capture window's), the thread named, the stack's frames
// interned, the boot clock mapped to the wall clock.
func TestExportPerfetto(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		testutil.Unavailable(t, "no protoc (Debian's protobuf-compiler; make test installs it): %v", err)
	}
	dir := t.TempDir()
	exe := buildChain(t, dir)
	const n uint64 = 2000
	capPath := filepath.Join(dir, "leaf.arrow")
	if _, stderr, code := runCLI(t, "record", "-o", capPath, "-c", fmt.Sprintf("%s %d", exe, n),
		fmt.Sprintf("leaf=u:%s:leaf(arg0,ustack)", exe), fmt.Sprintf("ur:%s:leaf", exe)); code != 0 || !strings.Contains(stderr, " 0 lost") {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	trace := filepath.Join(dir, "leaf.pftrace")
	_, stderr, code := runCLI(t, "export", capPath, "-o", trace)
	if want := fmt.Sprintf("wrote a Perfetto trace of %s slices", humanfmt.Commas(n)); code != 0 || !strings.Contains(stderr, want) {
		t.Fatalf("export: exit %d, want %q\n%s", code, want, stderr)
	}
	in, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(protoc, "--decode=perfetto.protos.Trace", "-I", filepath.Join("..", "..", "testdata", "third_party", "perfetto"), "bpftape_trace.proto")
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("protoc --decode: %v\n%s", err, errOut.String())
	}
	text := out.String()
	// Every call, and the window on the bpftape track.
	if b, e := strings.Count(text, "type: TYPE_SLICE_BEGIN"), strings.Count(text, "type: TYPE_SLICE_END"); uint64(b) != n+1 || uint64(e) != n+1 {
		t.Errorf("%d slice begins and %d ends, want %d each (the calls and the window)", b, e, n+1)
	}
	for _, want := range []string{
		`thread_name: "chain"`, `str: "leaf"`, `str: "mid"`, `str: "top"`, `str: "main"`, `name: "arg0"`,
		"primary_trace_clock: BUILTIN_CLOCK_BOOTTIME", "clock_id: 1\n", "clock_id: 6\n", "timestamp_clock_id: 6",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the decoded trace lacks %q", want)
		}
	}
	if strings.Contains(text, "unmatched") {
		t.Errorf("a call of a complete run is marked unmatched")
	}
}
