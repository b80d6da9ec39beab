package heatmap

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// Colour scales for SVGOptions.Color.
const (
	ColorLog    = "log"    // colour follows log(count): a cell of 1 still shows next to one of 10^5
	ColorLinear = "linear" // colour proportional to the count, as trace2heatmap.pl
)

// SVGOptions shape the drawing.
type SVGOptions struct {
	Width int    // target width in px of the whole image; 0 is 960
	Color string // ColorLog (default) or ColorLinear
}

// palette runs from the colour of a count of 1 to that of the largest count
// (ColorBrewer's YlOrRd, without its palest steps, which vanish on white).
var palette = [][3]float64{
	{254, 217, 118}, {254, 178, 76}, {253, 141, 60}, {252, 78, 42}, {227, 26, 28}, {189, 0, 38}, {128, 0, 38},
}

func colorAt(level float64) string {
	level = min(max(level, 0), 1)
	x := level * float64(len(palette)-1)
	i := min(int(x), len(palette)-2)
	f := x - float64(i)
	var c [3]int
	for k := range c {
		c[k] = int(math.Round(palette[i][k] + (palette[i+1][k]-palette[i][k])*f))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// level maps a count to [0, 1] on the chosen scale.
func level(n, maxN uint64, scale string) float64 {
	if maxN <= 1 {
		return 1
	}
	if scale == ColorLinear {
		return float64(n) / float64(maxN)
	}
	return math.Log(float64(n)) / math.Log(float64(maxN))
}

// countAt inverts level: the count that gets colour level l.
func countAt(l float64, maxN uint64, scale string) uint64 {
	if scale == ColorLinear {
		return uint64(math.Round(l * float64(maxN)))
	}
	return uint64(math.Round(math.Exp(l * math.Log(float64(maxN)))))
}

// Layout constants, in px.
const (
	minMarginLeft = 86
	marginRight   = 24
	marginTop     = 44
	fontSize      = 12
)

// WriteSVG draws the map as a standalone SVG image: cells coloured by
// count, each with a <title> tooltip (count, share of its column,
// cumulative percentile in its column), axes in human units and a legend.
// Unlike trace2heatmap.pl, the last column and the top row are drawn.
func (m *Map) WriteSVG(w io.Writer, o SVGOptions) error {
	bw := bufio.NewWriter(w)
	m.writeSVG(bw, o)
	return bw.Flush()
}

func (m *Map) writeSVG(w *bufio.Writer, o SVGOptions) {
	if o.Width <= 0 {
		o.Width = 960
	}
	if o.Color != ColorLinear {
		o.Color = ColorLog
	}
	marginLeft := minMarginLeft
	for _, l := range m.Rows.Labels {
		marginLeft = max(marginLeft, 7*len(l)+28)
	}
	r0, r1 := m.rowSpan()
	nrows := r1 - r0 + 1
	total, maxN := m.Total(), m.MaxCount()
	cols := max(m.Cols, 1)
	cw := max(2, (o.Width-marginLeft-marginRight)/cols)
	rh := min(24, max(6, 360/nrows))
	if m.Rows.Labels != nil {
		rh = 20
	}
	pw, ph := cw*cols, rh*nrows
	width := marginLeft + pw + marginRight
	legendY := marginTop + ph + 48
	height := legendY + 44 + 16*len(m.captions(total, maxN))

	desc := fmt.Sprintf("Heat map of %s: %d %s over %s in %d columns of %s", m.Title, total, m.noun(),
		humanfmt.Duration(float64(int64(m.Cols)*m.Step)), m.Cols, humanfmt.Duration(float64(m.Step)))
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif" font-size="%d">`+"\n",
		width, height, width, height, fontSize)
	fmt.Fprintf(w, "<title>%s</title>\n", esc(desc))
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(w, `<text x="%d" y="20" font-size="15" font-weight="600" fill="#1f2328">%s</text>`+"\n", marginLeft, esc(m.Title))
	fmt.Fprintf(w, `<text x="%d" y="36" fill="#57606a">%s</text>`+"\n", marginLeft,
		esc(fmt.Sprintf("%s %s · column %s · rows %s", humanfmt.Commas(total), m.noun(), humanfmt.Duration(float64(m.Step)), m.rowKind())))
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f5f7"/>`+"\n", marginLeft, marginTop, pw, ph)

	if total > 0 {
		fmt.Fprintf(w, `<g shape-rendering="crispEdges">`+"\n")
		for c := 0; c < m.Cols; c++ {
			var colTotal uint64
			for r := r0; r <= r1; r++ {
				colTotal += m.Count(c, r)
			}
			var cum uint64
			for r := r0; r <= r1; r++ {
				n := m.Count(c, r)
				if n == 0 {
					continue
				}
				cum += n
				x := marginLeft + c*cw
				y := marginTop + (r1-r)*rh
				t0 := m.Start - m.Base + int64(c)*m.Step
				noun := m.noun()
				var tip string
				if m.Rows.Labels != nil {
					tip = esc(fmt.Sprintf("%s to %s", humanfmt.Offset(t0), humanfmt.Offset(t0+m.Step)),
						fmt.Sprintf("%s: %s %s, %.1f%% of the column", m.Rows.Labels[r], humanfmt.Commas(n), noun, 100*float64(n)/float64(colTotal)))
				} else {
					tip = esc(fmt.Sprintf("%s to %s", humanfmt.Offset(t0), humanfmt.Offset(t0+m.Step)),
						fmt.Sprintf("%s: %s", m.YLabel, m.rangeText(r)),
						fmt.Sprintf("%s %s, %.1f%% of the column", humanfmt.Commas(n), noun, 100*float64(n)/float64(colTotal)),
						fmt.Sprintf("%.1f%% of the column at or below this row", 100*float64(cum)/float64(colTotal)))
				}
				fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
					x, y, cw, rh, colorAt(level(n, maxN, o.Color)), tip)
			}
		}
		fmt.Fprintf(w, "</g>\n")
	} else {
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle" fill="#57606a">no samples</text>`+"\n", marginLeft+pw/2, marginTop+ph/2+4)
	}

	// Y axis: row boundaries, labelled with the value that starts the row
	// above (the top one with the end of the top row), every k-th row.
	every := max(1, (fontSize+4+rh-1)/rh)
	axisX := marginLeft - 6
	fmt.Fprintf(w, `<g fill="#1f2328" text-anchor="end">`+"\n")
	for r := r0; r <= r1 && m.Rows.Labels != nil; r++ {
		style := ""
		if slices.Contains(m.Alert, r) {
			style = ` fill="#cf222e" font-weight="600"`
		}
		fmt.Fprintf(w, `<text x="%d" y="%d"%s>%s</text>`+"\n", axisX, marginTop+(r1-r)*rh+rh/2+4, style, esc(m.Rows.Labels[r]))
	}
	for r := r0; r <= r1+1 && m.Rows.Labels == nil; r++ {
		if (r-r0)%every != 0 && r != r1+1 {
			continue
		}
		if r == r1+1 && (r-r0)%every != 0 && (r1+1-r0)%every < every/2+1 && nrows > every {
			continue // too close to the last label drawn
		}
		var label string
		if r <= r1 {
			lo, _ := m.Rows.Bounds(r)
			label = m.fmtValue(lo)
		} else {
			_, hi := m.Rows.Bounds(r1)
			label = m.fmtValue(hi + 1)
			if hi == math.MaxUint64 || (m.Rows.Linear && int64(hi) == math.MaxInt64) {
				label = "max"
			}
		}
		y := marginTop + (r1-r+1)*rh
		fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", axisX, y+4, esc(label))
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#8c959f"/>`+"\n", marginLeft-3, marginLeft, y, y)
	}
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<text transform="translate(14 %d) rotate(-90)" text-anchor="middle" fill="#1f2328">%s</text>`+"\n",
		marginTop+ph/2, esc(m.yTitle()))

	// X axis: offsets from the capture start at round column boundaries.
	stepCols := niceCols(max(1, (84+cw-1)/cw))
	fmt.Fprintf(w, `<g fill="#1f2328" text-anchor="middle">`+"\n")
	for c := 0; c <= m.Cols; c += stepCols {
		x := marginLeft + c*cw
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#8c959f"/>`+"\n", x, x, marginTop+ph, marginTop+ph+4)
		fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", x, marginTop+ph+17, esc(humanfmt.Offset(m.Start-m.Base+int64(c)*m.Step)))
	}
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle" fill="#1f2328">time since capture start</text>`+"\n",
		marginLeft+pw/2, marginTop+ph+34)

	// Legend: a ramp from a count of 1 to the largest count.
	rampW, steps := 240, 48
	fmt.Fprintf(w, `<text x="%d" y="%d" fill="#1f2328">%s per cell</text>`+"\n", marginLeft, legendY+10, esc(m.noun()))
	lx := marginLeft + 104
	fmt.Fprintf(w, `<g shape-rendering="crispEdges">`)
	for i := 0; i < steps; i++ {
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="12" fill="%s"/>`, lx+i*rampW/steps, legendY, rampW/steps+1, colorAt(float64(i)/float64(steps-1)))
	}
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<g fill="#1f2328" text-anchor="middle">`)
	if maxN > 0 {
		last := ""
		for _, l := range []float64{0, 0.25, 0.5, 0.75, 1} {
			n := countAt(l, maxN, o.Color)
			if l == 0 {
				n = min(1, maxN)
			}
			s := humanfmt.Commas(n)
			if s == last {
				continue
			}
			last = s
			fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`, lx+int(l*float64(rampW)), legendY+26, s)
		}
	}
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<text x="%d" y="%d" fill="#57606a">%s scale</text>`+"\n", lx+rampW+12, legendY+10, esc(o.Color))
	for i, line := range m.captions(total, maxN) {
		fmt.Fprintf(w, `<text x="%d" y="%d" fill="#57606a">%s</text>`+"\n", marginLeft, legendY+44+16*i, esc(line))
	}
	fmt.Fprintf(w, "</svg>\n")
}

// captions are the lines under the legend: what is not drawn and notes.
func (m *Map) captions(total, maxN uint64) []string {
	var out []string
	var parts []string
	if m.Below > 0 {
		parts = append(parts, fmt.Sprintf("%s below %s", humanfmt.Commas(m.Below), m.fmtValue(uint64(m.Rows.Min))))
	}
	if m.Above > 0 {
		parts = append(parts, fmt.Sprintf("%s above %s", humanfmt.Commas(m.Above), m.fmtValue(uint64(m.Rows.Max))))
	}
	if m.Outside > 0 {
		parts = append(parts, fmt.Sprintf("%s outside the time axis", humanfmt.Commas(m.Outside)))
	}
	if len(parts) > 0 {
		out = append(out, "not drawn: "+strings.Join(parts, ", "))
	}
	return append(out, m.Notes...)
}

func (m *Map) rowKind() string {
	if m.Rows.Labels != nil {
		return "one per " + m.YLabel
	}
	if m.Rows.Linear {
		lo, hi := m.Rows.Bounds(0)
		return fmt.Sprintf("linear, %s wide", m.fmtValue(hi-lo+1))
	}
	return "log2 (BCC buckets)"
}

func (m *Map) yTitle() string {
	if m.Rows.Linear || m.Rows.Labels != nil {
		return m.YLabel
	}
	return m.YLabel + " (log2)"
}

// rangeText is row r's range, exact, with human units when they differ.
func (m *Map) rangeText(r int) string {
	lo, hi := m.Rows.Bounds(r)
	exact := m.fmtExact(lo) + " to " + m.fmtExact(hi)
	human := m.fmtValue(lo) + " to " + m.fmtValue(hi)
	if m.Durations {
		return exact + " ns (" + human + ")"
	}
	if human != exact {
		return exact + " (" + human + ")"
	}
	return exact
}

func (m *Map) fmtExact(v uint64) string {
	if m.Rows.Linear {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatUint(v, 10)
}

// fmtValue labels a row bound: a duration for latencies, binary prefixes
// for the powers of two of log2 rows, decimal ones for linear rows.
func (m *Map) fmtValue(v uint64) string {
	if m.Durations {
		if m.Rows.Linear {
			return humanfmt.Duration(float64(int64(v)))
		}
		return humanfmt.Duration(float64(v))
	}
	if m.Rows.Linear {
		return humanfmt.SI(int64(v))
	}
	return humanfmt.Binary(v)
}

// niceCols rounds a column count up to 1, 2 or 5 times a power of ten.
func niceCols(n int) int {
	for p := 1; ; p *= 10 {
		for _, k := range []int{1, 2, 5} {
			if k*p >= n {
				return k * p
			}
		}
	}
}

// esc escapes text for SVG with textsafe.XMLText, a line at a time: a
// tooltip's lines stay lines, and a newline in a capture's name shows as
// \n instead of starting one.
func esc(lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(textsafe.XMLText(l))
	}
	return b.String()
}

func (m *Map) noun() string {
	if m.Noun == "" {
		return "events"
	}
	return m.Noun
}
