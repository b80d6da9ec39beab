//go:build interop

package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bpftape/bpftape/internal/humanfmt"
)

// TestStacksChainReport records TestStacksChain's capture (leaf's user
// stack on each of the chain workload's calls) and opens its report in
// Chromium (checkFlameReport).
func TestStacksChainReport(t *testing.T) {
	const n = 5000
	_, capPath := recordChain(t, t.TempDir(), n)
	checkFlameReport(t, capPath, n)
}

// checkFlameReport writes the report of a chain capture and opens it in
// Chromium: the flame graph section shows leaf's stack as a full-width
// column of main, top, mid and leaf, a click zooms, and the page logs no
// error.
func checkFlameReport(t *testing.T, capPath string, n int) {
	t.Helper()
	html := filepath.Join(t.TempDir(), "report.html")
	if _, stderr, code := runCLI(t, "report", capPath, "-o", html); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	c := startChromium(t)
	p := c.newPage(1366, 768)
	pageURL := (&url.URL{Scheme: "file", Path: html}).String()
	p.navigate(pageURL)
	var raw string
	p.eval(`JSON.stringify({
		nav: [...document.querySelectorAll('nav a')].map(a => a.getAttribute('href')),
		graphs: document.querySelectorAll('#flamegraphs ~ .figure svg').length,
		titles: [...document.querySelectorAll('#flamegraphs ~ .figure svg g > title')].map(t => t.textContent),
	})`, &raw)
	var dom struct {
		Nav    []string `json:"nav"`
		Graphs int      `json:"graphs"`
		Titles []string `json:"titles"`
	}
	if err := jsonUnmarshal(raw, &dom); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dom.Nav, "#flamegraphs") || dom.Graphs != 1 {
		t.Errorf("navigation %v, %d flame graphs; want a link and 1", dom.Nav, dom.Graphs)
	}
	for _, fn := range []string{"main", "top", "mid", "leaf"} {
		want := fmt.Sprintf("%s (%s events, 100.00%%)", fn, humanfmt.Commas(uint64(n)))
		if !slices.Contains(dom.Titles, want) {
			t.Errorf("no frame %q among %q", want, dom.Titles)
		}
	}
	msgs, urls := p.problems()
	if len(msgs) > 0 || len(urls) != 1 {
		t.Errorf("console errors %q, requests %v", msgs, urls)
	}
}
