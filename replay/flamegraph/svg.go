package flamegraph

import (
	"bufio"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// Layout, in px, as flamegraph.pl's defaults.
const (
	defaultWidth    = 1200
	defaultMinWidth = 0.1
	xpad            = 10               // left and right margins
	frameHeight     = 16               // one row of frames
	framePad        = 1                // gap between rows
	fontSize        = 12               // frame labels
	charWidth       = 7.08             // estimated advance of a character: fontSize × flamegraph.pl's fontwidth 0.59
	ypadTop         = fontSize * 3     // title
	ypadSubtitle    = fontSize * 2     // subtitle, when there is one
	ypadBottom      = fontSize*2 + 10  // details line
	controlsFromEnd = xpad + 100       // "Search" and "Matched:" start this far left of the right edge
	matchColor      = "rgb(230,0,230)" // search hits, magenta
	fontFamily      = `Verdana, "DejaVu Sans", "Bitstream Vera Sans", sans-serif`
	emptyText       = "No stacks to draw" // the drawing of an empty profile
)

// frame is a node placed in the drawing.
type frame struct {
	n     *node
	x     uint64 // offset from the left, in units of Value
	depth int    // 0 is the root
	desc  int    // how many frames drawn after it, in preorder, are in its subtree
}

// layout places the frames in preorder: each frame's own weight (stacks
// that end in it) on its left, as flamegraph.pl draws it (a folded stack
// sorts before its extensions), then its children in name order. A frame
// narrower than minWidth px is left out with its subtree.
func layout(root *node, pxPerUnit, minWidth float64) []frame {
	var out []frame
	var walk func(n *node, x uint64, depth int)
	walk = func(n *node, x uint64, depth int) {
		i := len(out)
		out = append(out, frame{n: n, x: x, depth: depth})
		var inChildren uint64
		for _, c := range n.children {
			inChildren += c.value
		}
		cx := x + n.value - inChildren
		for _, c := range n.children {
			if c.value > 0 && float64(c.value)*pxPerUnit >= minWidth {
				walk(c, cx, depth+1)
			}
			cx += c.value
		}
		out[i].desc = len(out) - i - 1
	}
	walk(root, 0, 0)
	return out
}

// render writes the whole drawing; prefix starts every id and CSS rule.
func render(w *bufio.Writer, stacks []Stack, o Options, prefix string, prolog bool) error {
	if o.Width == 0 {
		o.Width = defaultWidth
	}
	if o.Width < MinImageWidth {
		return fmt.Errorf("flamegraph: width %d px: want at least %d", o.Width, MinImageWidth)
	}
	switch {
	case o.MinWidth == 0 || math.IsNaN(o.MinWidth):
		o.MinWidth = defaultMinWidth
	case o.MinWidth < 0:
		o.MinWidth = 0
	}
	if o.Title == "" {
		o.Title = "Flame Graph"
	}
	if o.Unit == "" {
		o.Unit = UnitSamples
	}
	root, err := build(stacks)
	if err != nil {
		return err
	}
	r := &renderer{w: w, o: o, id: prefix + "svg", prefix: prefix, total: root.value}
	r.fw = float64(o.Width - 2*xpad)
	r.top = ypadTop
	if o.Subtitle != "" {
		r.top += ypadSubtitle
	}
	if prolog {
		w.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="no"?>` + "\n")
	}
	if root.value == 0 {
		r.height = r.top + 3*frameHeight + ypadBottom
		r.head()
		fmt.Fprintf(w, `<text class="empty" x="%d" y="%d">%s</text>`+"\n", o.Width/2, r.top+frameHeight*3/2+4, emptyText)
		w.WriteString("</svg>\n")
		return nil
	}
	r.px = r.fw / float64(root.value)
	r.frames = layout(root, r.px, o.MinWidth)
	maxDepth := 0
	for _, f := range r.frames {
		maxDepth = max(maxDepth, f.depth)
		if o.Diff && f.n.value > 0 {
			r.maxDelta = math.Max(r.maxDelta, math.Abs(delta(f.n)))
		}
	}
	r.height = (maxDepth+1)*frameHeight + r.top + ypadBottom
	r.head()
	fmt.Fprintf(w, `<text class="ctl unzoom hide" x="%d" y="%d">Reset Zoom</text>`+"\n", xpad, fontSize*2)
	fmt.Fprintf(w, `<text class="ctl search" x="%d" y="%d">Search</text>`+"\n", o.Width-controlsFromEnd, fontSize*2)
	fmt.Fprintf(w, `<text class="matched" x="%d" y="%d"></text>`+"\n", o.Width-controlsFromEnd, r.height-ypadBottom/2)
	fmt.Fprintf(w, `<text class="details" x="%d" y="%d"></text>`+"\n", xpad, r.height-ypadBottom/2)
	w.WriteString(`<g class="frames">` + "\n")
	for _, f := range r.frames {
		r.frame(f)
	}
	w.WriteString("</g>\n")
	w.WriteString("<script><![CDATA[\n")
	w.WriteString(scriptFor(r.id, o.Width))
	w.WriteString("]]></script>\n</svg>\n")
	return nil
}

type renderer struct {
	w          *bufio.Writer
	o          Options
	id, prefix string
	total      uint64
	fw         float64 // width of the root frame, px
	px         float64 // px per unit of Value
	top        int     // height above the frames
	height     int
	frames     []frame
	maxDelta   float64 // Diff: largest |Value-Base| of a frame
}

// head writes the root element, the style, the background and the titles.
func (r *renderer) head() {
	w, o, id := r.w, r.o, r.id
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" id="%s" class="flamegraph" width="%d" height="%d" viewBox="0 0 %d %d" data-total="%d">`+"\n",
		id, o.Width, r.height, o.Width, r.height, r.total)
	css := strings.NewReplacer("#ID", "#"+id, "FONT", fontFamily, "MATCH", matchColor).Replace(`<style>
#ID text { font-family: FONT; font-size: 12px; fill: #000; }
#ID .title { font-size: 17px; text-anchor: middle; }
#ID .subtitle { text-anchor: middle; fill: #808080; }
#ID .empty { text-anchor: middle; fill: #57606a; }
#ID .ctl { cursor: pointer; }
#ID .search { opacity: 0.5; }
#ID .search:hover, #ID .search.active { opacity: 1; }
#ID .unzoom:hover, #ID .search:hover { text-decoration: underline; }
#ID .f { cursor: pointer; }
#ID .f:hover > rect { stroke: #000; stroke-width: 0.5; }
#ID .f > text { pointer-events: none; }
#ID .parent { opacity: 0.5; }
#ID .hide { display: none; }
</style>
`)
	w.WriteString(css)
	fmt.Fprintf(w, `<defs><linearGradient id="%sbackground" x1="0" y1="0" x2="0" y2="1"><stop stop-color="#eeeeee" offset="5%%"/><stop stop-color="#eeeeb0" offset="95%%"/></linearGradient></defs>`+"\n", r.prefix)
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%d" fill="url(#%sbackground)"/>`+"\n", o.Width, r.height, r.prefix)
	fmt.Fprintf(w, `<text class="title" x="%d" y="%d">%s</text>`+"\n", o.Width/2, fontSize*2, textsafe.XMLText(o.Title))
	if o.Subtitle != "" {
		fmt.Fprintf(w, `<text class="subtitle" x="%d" y="%d">%s</text>`+"\n", o.Width/2, fontSize*4, textsafe.XMLText(o.Subtitle))
	}
}

// frame writes one frame: a group holding its tooltip, its box and its
// label, with its position in units of Value and the size of its subtree
// for the script.
func (r *renderer) frame(f frame) {
	x := round2(xpad + float64(f.x)*r.px)
	width := round2(float64(f.n.value) * r.px)
	var y float64
	if r.o.Inverted {
		y = float64(r.top + f.depth*frameHeight)
	} else {
		y = float64(r.height - ypadBottom - (f.depth+1)*frameHeight + framePad)
	}
	name := display(f.n.name)
	fill := color(f.n.name)
	if r.o.Diff {
		fill = diffColor(delta(f.n), r.maxDelta)
	}
	fmt.Fprintf(r.w, `<g class="f" data-x="%d" data-w="%d" data-n="%d"><title>%s (%s)</title><rect x="%s" y="%s" width="%s" height="%d" rx="2" ry="2" fill="%s"/><text x="%s" y="%s">%s</text></g>`+"\n",
		f.x, f.n.value, f.desc, html.EscapeString(name), textsafe.XMLText(r.info(f.n)),
		num(x), num(y), num(width), frameHeight-framePad, fill,
		num(x+3), num(y+10.5), html.EscapeString(clip(name, width)))
}

// info is what a tooltip says after the name: the weight, its share of
// the total and, in a differential graph, the change as a share of it.
func (r *renderer) info(n *node) string {
	var amount string
	if r.o.Unit == UnitNs {
		amount = humanfmt.Duration(float64(n.value))
	} else {
		amount = humanfmt.Commas(n.value) + " " + r.o.Unit
	}
	s := fmt.Sprintf("%s, %.2f%%", amount, 100*float64(n.value)/float64(r.total))
	if r.o.Diff {
		d := 100 * delta(n) / float64(r.total)
		sign := ""
		if d > 0 {
			sign = "+"
		}
		s += fmt.Sprintf("; %s%.2f%%", sign, d)
	}
	// The script takes the name back from the tooltip by cutting the last
	// " (...)": the info must hold no parenthesis.
	return strings.NewReplacer("(", "[", ")", "]").Replace(s)
}

func delta(n *node) float64 { return float64(n.value) - float64(n.base) }

// clip fits a label to a frame of width px as flamegraph.pl does, from an
// estimate of the width of a character: the whole name, or its start and
// "..", or nothing when fewer than 3 characters fit. The script does the
// same after a zoom.
func clip(s string, width float64) string {
	chars := int(math.Floor((width - 3) / charWidth))
	if chars < 3 {
		return ""
	}
	if utf8.RuneCountInString(s) <= chars {
		return s
	}
	return string([]rune(s)[:chars-2]) + ".."
}

// display is how a frame's name is shown: without stackcollapse's kernel
// annotation "_[k]" (the colour tells), and readable as plain text.
func display(name string) string {
	return textsafe.XMLPlain(strings.TrimSuffix(name, kernelSuffix))
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// num formats a coordinate with at most two decimals, as the script does.
func num(f float64) string { return strconv.FormatFloat(round2(f), 'f', -1, 64) }
