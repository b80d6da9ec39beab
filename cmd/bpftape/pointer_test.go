//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

// TestPointerFieldsOutput records exprs' rx(struct req *req, unsigned int
// size, short delta, const char *label) without a field list, and with
// expressions, and checks what the verbs make of the fields the capture
// marks as addresses: events prints them in hex, and a report draws a
// histogram and a heat map of size but not of req, and the latency of rx,
// which it pairs with rx:return by itself.
func TestPointerFieldsOutput(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	exe := testutil.BuildC(t, "../../testdata/exprs/exprs.c", "exprs-O2", "-O2", "-g")
	capPath := filepath.Join(dir, "p.arrow")
	if r := runBin(t, exec.Command(bin, "record", "-o", capPath, "-c", exe+" 12",
		"u:"+exe+":rx", "ur:"+exe+":rx", "e=u:"+exe+":rx(req->next, req->id, req:u64, str(label))")); r.code != 0 {
		t.Fatalf("record: exit %d\n%s", r.code, r.stderr)
	}
	out, errOut, code := runCLI(t, "events", "--time", "none", capPath, "rx")
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 13 {
		t.Fatalf("events printed %d lines, want 13:\n%s", len(lines), out)
	}
	// The first call's size is 0, the second's 512 (see exprs.c).
	if !regexp.MustCompile(`req=0x[0-9a-f]{4,} size=512 `).MatchString(lines[2]) {
		t.Errorf("second rx event %q: want req in hex, then size=512", lines[2])
	}
	html := filepath.Join(dir, "p.html")
	if _, errOut, code := runCLI(t, "report", capPath, "-o", html); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"req uint64 (address)", "label uint64 (address)", "Heat map of rx size", "bpftape hist " + capPath + " rx size",
		"Heat map of e req-&gt;id", `<h2 id="latency">`, "rx → rx:return", "12 calls"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"Heat map of rx req", "bpftape hist " + capPath + " rx req ", "Heat map of rx label", "Heat map of e req-&gt;next"} {
		if strings.Contains(page, bad) {
			t.Errorf("report has %q", bad)
		}
	}
}
