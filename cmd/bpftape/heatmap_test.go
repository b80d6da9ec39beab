package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/replay/replaytest"
)

// cellCounts sums the counts in the cell tooltips of a heat map SVG, per
// row range ("1024 to 2047") and in all, checking that the SVG is XML.
func cellCounts(t *testing.T, svg string) (map[string]uint64, uint64) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("the SVG is not XML: %v", err)
			}
			break
		}
	}
	re := regexp.MustCompile(`<rect [^>]*><title>[^<]*?: (-?\d+) to (-?\d+)[^<]*?\n([\d,]+) (?:events|calls), `)
	rows := map[string]uint64{}
	var total uint64
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		n, err := strconv.ParseUint(strings.ReplaceAll(m[3], ",", ""), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		rows[m[1]+" to "+m[2]] += n
		total += n
	}
	return rows, total
}

// TestHeatmapCells draws the seed's USDT RX length heat map and checks that
// each row's cells add up to the BCC histogram's slot and all of them to
// the events, then the RX latency map from entry/return pairs.
func TestHeatmapCells(t *testing.T) {
	dir := seedCaptures(t)
	out := filepath.Join(t.TempDir(), "h.svg")
	_, errOut, code := runCLI(t, "heatmap", filepath.Join(dir, replaytest.USDTFile), "rx_end", "arg1", "-o", out, "--step", "100ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rows, total := cellCounts(t, string(b))
	var want uint64
	for i, n := range replaytest.USDTRXLen {
		want += n
		slot := i + 1
		lo, hi := uint64(0), uint64(1)
		if slot > 1 {
			lo, hi = 1<<(slot-1), 1<<slot-1
		}
		if got := rows[strconv.FormatUint(lo, 10)+" to "+strconv.FormatUint(hi, 10)]; got != n {
			t.Errorf("row %d to %d: cells hold %d, the seed's slot %d", lo, hi, got, n)
		}
	}
	if total != want {
		t.Errorf("cells hold %d events, the capture %d", total, want)
	}

	// Latency: one call per RX entry/return pair.
	stdout, errOut, code := runCLI(t, "heatmap", filepath.Join(dir, replaytest.UprobesFile), "--latency", "rx", "rx_ret", "--rows", "10")
	if code != 0 {
		t.Fatalf("latency: exit %d: %s", code, errOut)
	}
	_, total = cellCounts(t, stdout)
	want = 0
	for _, n := range replaytest.RXSize {
		want += n
	}
	if total != want || !strings.Contains(stdout, "rows linear") {
		t.Errorf("latency cells hold %d calls, want %d", total, want)
	}
}

func TestHeatmapUsage(t *testing.T) {
	for _, args := range [][]string{
		{"heatmap", "x.arrow", "rx"},
		{"heatmap", "x.arrow", "rx", "arg2", "--color", "blue"},
		{"heatmap", "x.arrow", "rx", "arg2", "--min", "ten"},
		{"report"},
		{"report", "x.arrow", "--latency", "rx rx_ret tx"},
		{"export", "x.arrow"},
		{"export", "x.arrow", "--format", "xml"},
		{"export", "x.arrow", "--format", "csv", "--partition", "-o", "d"},
		{"export", "x.arrow", "--format", "csv", "--lost", "some"},
		{"merge", "a.arrow", "b.arrow"},
	} {
		if _, errOut, code := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errOut, exitUsage)
		}
	}
	for _, verb := range []string{"heatmap", "report", "export", "merge"} {
		out, _, code := runCLI(t, verb, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "bpftape "+verb+" ") {
			t.Errorf("%s --help: exit %d\n%s", verb, code, out)
		}
	}
}
