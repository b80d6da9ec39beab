//go:build interop

package main

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReportInChromium writes a report and opens it in a real headless
// Chromium: no console errors, no request but the page itself, the
// expected sections and figures in the DOM, no horizontal scrolling on a
// laptop screen. With BPFTAPE_REPORT_PNG set, it saves a screenshot there.
func TestReportInChromium(t *testing.T) {
	if _, err := chromiumPath(); err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): cannot check the report in a browser")
	}
	dir := t.TempDir()
	capPath := filepath.Join(dir, "vnet.arrow")
	writeVnet(t, capPath, "hv-07", 20000)
	html := filepath.Join(dir, "report.html")
	_, errOut, code := runCLI(t, "report", capPath, "-o", html, "--latency", "rx rx_ret",
		"--requests", "tx_len arg0 tx_ret retval", "--compare", "rx,arg2,rx_ret,retval", "--title", "virtio-net RX stalls on hv-07")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "events were lost") {
		t.Errorf("no loss warning on stderr: %q", errOut)
	}

	c := startChromium(t)
	p := c.newPage(1366, 768)
	pageURL := (&url.URL{Scheme: "file", Path: html}).String()
	p.navigate(pageURL)
	var dom struct {
		Title       string   `json:"title"`
		LossBox     bool     `json:"lossBox"`
		LossText    string   `json:"lossText"`
		Sections    []string `json:"sections"`
		Probes      []string `json:"probes"`
		Cards       int      `json:"cards"`
		Heatmaps    int      `json:"heatmaps"`
		CellTitles  int      `json:"cellTitles"`
		BadTitles   int      `json:"badTitles"`
		BarRows     int      `json:"barRows"`
		Scripts     int      `json:"scripts"`
		Resources   int      `json:"resources"`
		ScrollWidth int      `json:"scrollWidth"`
		InnerWidth  int      `json:"innerWidth"`
		Font        string   `json:"font"`
		Nav         []string `json:"nav"`
		Details     int      `json:"details"`
	}
	var raw string
	p.eval(`JSON.stringify({
		title: document.title,
		lossBox: !!document.querySelector('#losses.box.loss[role=alert]'),
		lossText: document.querySelector('#losses').textContent,
		sections: [...document.querySelectorAll('h2[id]')].map(h => h.id),
		probes: [...document.querySelectorAll('table.probes tbody tr td:first-child')].map(td => td.textContent),
		cards: document.querySelectorAll('.card').length,
		heatmaps: document.querySelectorAll('svg.heatmap').length,
		cellTitles: document.querySelectorAll('svg.heatmap rect > title').length,
		badTitles: [...document.querySelectorAll('svg.heatmap rect > title')].filter(t => !/ (events|calls), \d/.test(t.textContent)).length,
		barRows: document.querySelectorAll('table.bars tr[title]').length,
		scripts: document.scripts.length,
		resources: performance.getEntriesByType('resource').length,
		scrollWidth: document.documentElement.scrollWidth,
		innerWidth: window.innerWidth,
		font: getComputedStyle(document.body).fontFamily,
		nav: [...document.querySelectorAll('nav a')].map(a => a.getAttribute('href')),
		details: document.querySelectorAll('details pre').length,
	})`, &raw)
	if err := jsonUnmarshal(raw, &dom); err != nil {
		t.Fatal(err)
	}
	if dom.Title != "bpftape report: virtio-net RX stalls on hv-07" {
		t.Errorf("title %q", dom.Title)
	}
	if !dom.LossBox || !strings.Contains(dom.LossText, "events were lost") || !strings.Contains(dom.LossText, "rx_ret") {
		t.Errorf("loss warning box: %v %q", dom.LossBox, dom.LossText)
	}
	wantSections := []string{"summary", "probes", "timeline", "latency", "requests", "compare", "histograms", "heatmaps"}
	if !slices.Equal(dom.Sections, wantSections) {
		t.Errorf("sections %v, want %v", dom.Sections, wantSections)
	}
	for _, s := range wantSections {
		if !slices.Contains(dom.Nav, "#"+s) {
			t.Errorf("navigation has no link to #%s: %v", s, dom.Nav)
		}
	}
	if !slices.Equal(dom.Probes, []string{"rx", "rx_ret", "tx_len", "tx_ret"}) {
		t.Errorf("probe table %v", dom.Probes)
	}
	// 4 field histograms + 2 request histograms; time line + 4 field maps + latency map.
	if dom.Cards != 6 || dom.Heatmaps != 6 {
		t.Errorf("%d histogram cards, %d heat maps; want 6 and 6", dom.Cards, dom.Heatmaps)
	}
	if dom.CellTitles < 100 || dom.BadTitles != 0 || dom.BarRows < 20 || dom.Details < 8 {
		t.Errorf("%d cell tooltips (%d without a count), %d bar rows, %d text blocks", dom.CellTitles, dom.BadTitles, dom.BarRows, dom.Details)
	}
	if dom.Scripts != 0 || dom.Resources != 0 {
		t.Errorf("%d scripts, %d resources loaded", dom.Scripts, dom.Resources)
	}
	if dom.ScrollWidth > dom.InnerWidth {
		t.Errorf("the page scrolls sideways on a 1366px screen: %dpx wide", dom.ScrollWidth)
	}
	if !strings.Contains(dom.Font, "system-ui") {
		t.Errorf("body font %q", dom.Font)
	}
	msgs, urls := p.problems()
	if len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
	for _, u := range urls {
		if u != pageURL {
			t.Errorf("the page requested %s", u)
		}
	}
	if len(urls) != 1 {
		t.Errorf("requests %v, want just the page", urls)
	}
	if png := os.Getenv("BPFTAPE_REPORT_PNG"); png != "" {
		p.c.call(p.session, "Emulation.setDeviceMetricsOverride",
			map[string]any{"width": 1440, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
		if err := os.WriteFile(png, p.screenshot(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
