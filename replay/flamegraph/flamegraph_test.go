package flamegraph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// xnode is any element of a parsed SVG.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []xnode    `xml:",any"`
}

func (n *xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *xnode) has(name string) bool {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return true
		}
	}
	return false
}

func (n *xnode) walk(f func(*xnode)) {
	f(n)
	for i := range n.Kids {
		n.Kids[i].walk(f)
	}
}

func (n *xnode) classes() []string { return strings.Fields(n.attr("class")) }

// parseSVG checks that b is one well-formed XML document, token by token
// to its end (strict mode: character range, UTF-8, entities, nesting), and
// returns its root element.
func parseSVG(t *testing.T, b []byte) *xnode {
	t.Helper()
	if !utf8.Valid(b) {
		t.Fatal("the svg is not valid UTF-8")
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the svg is not well-formed XML: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v", tok.Name)
				}
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(tok)) > 0 {
				t.Fatalf("text outside the root: %q", tok)
			}
		}
	}
	if roots != 1 || depth != 0 {
		t.Fatalf("%d root elements, depth %d at the end", roots, depth)
	}
	var root xnode
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	return &root
}

// gframe is a frame as drawn.
type gframe struct {
	name, title, text, fill string
	x, y, w                 float64
	dataX, dataW            uint64
	desc                    int
}

func (f gframe) rgb(t *testing.T) (r, g, b int) {
	t.Helper()
	if _, err := fmt.Sscanf(f.fill, "rgb(%d,%d,%d)", &r, &g, &b); err != nil {
		t.Fatalf("%s: fill %q: %v", f.name, f.fill, err)
	}
	return r, g, b
}

var infoRE = regexp.MustCompile(` \([^()]*\)$`)

// framesOf returns the frames of a drawing in document order.
func framesOf(t *testing.T, root *xnode) []gframe {
	t.Helper()
	var out []gframe
	root.walk(func(n *xnode) {
		if n.XMLName.Local != "g" || !slices.Contains(n.classes(), "f") {
			return
		}
		var f gframe
		for _, k := range n.Kids {
			switch k.XMLName.Local {
			case "title":
				f.title = k.Text
				f.name = infoRE.ReplaceAllString(k.Text, "")
			case "text":
				f.text = k.Text
			case "rect":
				f.fill = k.attr("fill")
				f.x = float(t, k.attr("x"))
				f.y = float(t, k.attr("y"))
				f.w = float(t, k.attr("width"))
				if h := k.attr("height"); h != "15" {
					t.Errorf("frame height %s", h)
				}
			}
		}
		var err1, err2, err3 error
		f.dataX, err1 = strconv.ParseUint(n.attr("data-x"), 10, 64)
		f.dataW, err2 = strconv.ParseUint(n.attr("data-w"), 10, 64)
		f.desc, err3 = strconv.Atoi(n.attr("data-n"))
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("frame %q: %v", f.title, err)
		}
		out = append(out, f)
	})
	return out
}

func float(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

func byName(t *testing.T, frames []gframe, name string) gframe {
	t.Helper()
	var found []gframe
	for _, f := range frames {
		if f.name == name {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d frames named %q, want 1", len(found), name)
	}
	return found[0]
}

// folded parses lines of stackcollapse output: "a;b;c 123".
func folded(lines ...string) []Stack {
	var out []Stack
	for _, l := range lines {
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseUint(l[i+1:], 10, 64)
		if err != nil {
			panic(err)
		}
		out = append(out, Stack{Frames: strings.Split(l[:i], ";"), Value: v})
	}
	return out
}

func renderSVG(t *testing.T, stacks []Stack, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, stacks, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// known is a profile of 12,000 samples with a duplicate stack, a frame
// with its own samples, a kernel path and an unsymbolised frame.
var known = folded(
	"main;top;mid;leaf 5000",
	"main;top;other 3000",
	"main;top;other;entry_SYSCALL_64_[k];do_syscall_64_[k] 2000",
	"main;top;mid;leaf 1000",
	"main;[unknown] 400",
	"main;aaa 400",
	"main 200",
)

func TestLayout(t *testing.T) {
	out := renderSVG(t, known, Options{})
	root := parseSVG(t, out)
	if root.attr("width") != "1200" || root.attr("viewBox") != "0 0 1200 "+root.attr("height") {
		t.Errorf("size %s, viewBox %s", root.attr("width"), root.attr("viewBox"))
	}
	frames := framesOf(t, root)

	// Merged by path, in preorder, siblings by name.
	var names []string
	for _, f := range frames {
		names = append(names, f.name)
	}
	want := []string{"all", "main", "[unknown]", "aaa", "top", "mid", "leaf", "other", "entry_SYSCALL_64", "do_syscall_64"}
	if !slices.Equal(names, want) {
		t.Fatalf("frames %q\nwant %q", names, want)
	}

	values := map[string]uint64{"all": 12000, "main": 12000, "[unknown]": 400, "aaa": 400, "top": 11000,
		"mid": 6000, "leaf": 6000, "other": 5000, "entry_SYSCALL_64": 2000, "do_syscall_64": 2000}
	offsets := map[string]uint64{"all": 0, "main": 0, "[unknown]": 200, "aaa": 600, "top": 1000,
		"mid": 1000, "leaf": 1000, "other": 7000, "entry_SYSCALL_64": 10000, "do_syscall_64": 10000}
	titles := map[string]string{
		"all":              "all (12,000 samples, 100.00%)",
		"main":             "main (12,000 samples, 100.00%)",
		"[unknown]":        "[unknown] (400 samples, 3.33%)",
		"top":              "top (11,000 samples, 91.67%)",
		"leaf":             "leaf (6,000 samples, 50.00%)",
		"other":            "other (5,000 samples, 41.67%)",
		"do_syscall_64":    "do_syscall_64 (2,000 samples, 16.67%)",
		"entry_SYSCALL_64": "entry_SYSCALL_64 (2,000 samples, 16.67%)",
	}
	const px = 1180.0 / 12000
	for _, f := range frames {
		if f.dataW != values[f.name] || f.dataX != offsets[f.name] {
			t.Errorf("%s: at %d, %d wide; want at %d, %d wide", f.name, f.dataX, f.dataW, offsets[f.name], values[f.name])
		}
		if math.Abs(f.w-float64(values[f.name])*px) > 0.006 {
			t.Errorf("%s: %.3f px wide, want %.3f", f.name, f.w, float64(values[f.name])*px)
		}
		if math.Abs(f.x-(10+float64(offsets[f.name])*px)) > 0.006 {
			t.Errorf("%s: at x=%.3f, want %.3f", f.name, f.x, 10+float64(offsets[f.name])*px)
		}
		if w, ok := titles[f.name]; ok && f.title != w {
			t.Errorf("title %q, want %q", f.title, w)
		}
	}
	if all, leaf := byName(t, frames, "all"), byName(t, frames, "leaf"); all.w != 1180 || all.x != 10 || leaf.w != 590 {
		t.Errorf("root %v px at %v, leaf %v px: want 1180 at 10 and 590", all.w, all.x, leaf.w)
	}

	// Alphabetical siblings, own samples on the left of the children.
	main, unk, aaa, top := byName(t, frames, "main"), byName(t, frames, "[unknown]"), byName(t, frames, "aaa"), byName(t, frames, "top")
	if !(main.x < unk.x && unk.x < aaa.x && aaa.x < top.x) {
		t.Errorf("children of main not in name order after its own samples: %v %v %v %v", main.x, unk.x, aaa.x, top.x)
	}
	if mid, other := byName(t, frames, "mid"), byName(t, frames, "other"); mid.x >= other.x {
		t.Errorf("mid at %v, other at %v", mid.x, other.x)
	}

	// Flames grow up: each level 16 px above its parent.
	depth := map[string]int{"all": 0, "main": 1, "[unknown]": 2, "aaa": 2, "top": 2, "mid": 3, "leaf": 4, "other": 3, "entry_SYSCALL_64": 4, "do_syscall_64": 5}
	all := byName(t, frames, "all")
	for _, f := range frames {
		if f.y != all.y-16*float64(depth[f.name]) {
			t.Errorf("%s at y=%v, want %v", f.name, f.y, all.y-16*float64(depth[f.name]))
		}
	}
	if h := float(t, root.attr("height")); all.y+15 > h-30 || byName(t, frames, "do_syscall_64").y < 36 {
		t.Errorf("frames outside the drawing: root at %v, top frame at %v, height %v", all.y, byName(t, frames, "do_syscall_64").y, h)
	}

	// Subtree sizes for the script.
	for name, n := range map[string]int{"all": 9, "main": 8, "top": 5, "mid": 1, "leaf": 0, "other": 2, "aaa": 0} {
		if f := byName(t, frames, name); f.desc != n {
			t.Errorf("%s: %d frames in its subtree, want %d", name, f.desc, n)
		}
	}

	// Palettes: kernel orange, unsymbolised grey, the rest hot.
	for _, f := range frames {
		r, g, b := f.rgb(t)
		switch f.name {
		case "do_syscall_64", "entry_SYSCALL_64":
			if b != 0 || r < 190 || r > 240 || g < 90 || g > 155 {
				t.Errorf("kernel frame %s is %s, not orange", f.name, f.fill)
			}
		case "[unknown]":
			if r != g || g != b || r < 150 || r > 220 {
				t.Errorf("%s is %s, not grey", f.name, f.fill)
			}
		default:
			if r < 205 || b > 55 || g > 230 {
				t.Errorf("%s is %s, not in the hot palette", f.name, f.fill)
			}
		}
	}

	// Labels: whole when they fit, cut with ".." when not, none when tiny.
	if byName(t, frames, "leaf").text != "leaf" || byName(t, frames, "aaa").text != "aaa" {
		t.Errorf("labels %q %q", byName(t, frames, "leaf").text, byName(t, frames, "aaa").text)
	}
	if got := byName(t, frames, "[unknown]").text; got != "[un.." { // 39.33 px: 5 characters
		t.Errorf("[unknown] in 39 px is labelled %q, want [un..", got)
	}

	// Controls and the script.
	var texts []string
	var scripts []string
	root.walk(func(n *xnode) {
		switch n.XMLName.Local {
		case "text":
			if slices.Contains(n.classes(), "ctl") || n.attr("class") == "title" {
				texts = append(texts, n.Text)
			}
		case "script":
			scripts = append(scripts, n.Text)
		}
	})
	if !slices.Equal(texts, []string{"Flame Graph", "Reset Zoom", "Search"}) {
		t.Errorf("title and controls %q", texts)
	}
	if len(scripts) != 1 || !strings.Contains(scripts[0], `document.getElementById("fg-svg")`) || root.attr("id") != "fg-svg" {
		t.Errorf("%d scripts, root id %q", len(scripts), root.attr("id"))
	}
	if !bytes.HasPrefix(out, []byte("<?xml ")) {
		t.Error("no XML declaration")
	}
	for _, bad := range []string{"http:", "https:", "href", "@import"} {
		if bytes.Contains(bytes.ReplaceAll(out, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil), []byte(bad)) {
			t.Errorf("the svg refers to something outside itself: %q", bad)
		}
	}
}

func TestColorsStable(t *testing.T) {
	a := framesOf(t, parseSVG(t, renderSVG(t, known, Options{})))
	b := framesOf(t, parseSVG(t, renderSVG(t, folded("x;y;leaf 1", "z;do_syscall_64_[k] 7", "main 3"), Options{Inverted: true})))
	for _, name := range []string{"leaf", "do_syscall_64", "main"} {
		if fa, fb := byName(t, a, name), byName(t, b, name); fa.fill != fb.fill {
			t.Errorf("%s is %s in one graph and %s in another", name, fa.fill, fb.fill)
		}
	}
	if byName(t, a, "leaf").fill == byName(t, a, "mid").fill && byName(t, a, "mid").fill == byName(t, a, "top").fill {
		t.Error("different functions all have the same colour")
	}
}

func TestInverted(t *testing.T) {
	root := parseSVG(t, renderSVG(t, known, Options{Inverted: true, Title: "Icicle"}))
	frames := framesOf(t, root)
	all := byName(t, frames, "all")
	if all.y != 36 {
		t.Errorf("root at y=%v, want 36 (under the title)", all.y)
	}
	if leaf := byName(t, frames, "leaf"); leaf.y != all.y+4*16 {
		t.Errorf("leaf at y=%v, want %v", leaf.y, all.y+4*16)
	}
	if h := float(t, root.attr("height")); h != 36+6*16+34 {
		t.Errorf("height %v", h)
	}
}

func TestUnits(t *testing.T) {
	stacks := folded("a;b 1500000", "a;c 500000")
	frames := framesOf(t, parseSVG(t, renderSVG(t, stacks, Options{Unit: UnitNs})))
	if got := byName(t, frames, "b").title; got != "b (1.5ms, 75.00%)" {
		t.Errorf("ns title %q", got)
	}
	if got := byName(t, frames, "all").title; got != "all (2ms, 100.00%)" {
		t.Errorf("ns title %q", got)
	}
	frames = framesOf(t, parseSVG(t, renderSVG(t, folded("a;b 3", "a;c 1"), Options{Unit: UnitEvents})))
	if got := byName(t, frames, "c").title; got != "c (1 events, 25.00%)" {
		t.Errorf("events title %q", got)
	}
}

func TestSubtitle(t *testing.T) {
	plain := parseSVG(t, renderSVG(t, known, Options{}))
	sub := parseSVG(t, renderSVG(t, known, Options{Title: "CPU", Subtitle: "vnet.arrow, probe rx"}))
	var got []string
	sub.walk(func(n *xnode) {
		if n.attr("class") == "title" || n.attr("class") == "subtitle" {
			got = append(got, n.Text)
		}
	})
	if !slices.Equal(got, []string{"CPU", "vnet.arrow, probe rx"}) {
		t.Errorf("titles %q", got)
	}
	if hp, hs := float(t, plain.attr("height")), float(t, sub.attr("height")); hs != hp+24 {
		t.Errorf("height %v with a subtitle, %v without", hs, hp)
	}
}

func TestHostileNames(t *testing.T) {
	hostile := []struct{ raw, shown string }{
		{`<script>alert(1)</script>`, `<script>alert(1)</script>`},
		{`</script><script>alert(2)//`, `</script><script>alert(2)//`},
		{`a&b"c'd&amp;`, `a&b"c'd&amp;`},
		{`]]><x>`, `]]><x>`},
		{"<![CDATA[", "<![CDATA["},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"nul\x00byte", `nul\x00byte`},
		{"esc\x1b[31mred\a", `esc\x1b[31mred\x07`},
		{"tab\tnew\nline\r", `tab\tnew\nline\r`},
		{"non\ufffechar\uffff", `non\ufffechar\uffff`},
		{"(paren) (x)", "(paren) (x)"},
		{"", ""},
	}
	var stacks []Stack
	for i, h := range hostile {
		stacks = append(stacks, Stack{Frames: []string{"main", h.raw, "leaf"}, Value: uint64(100 + i)})
	}
	o := Options{Title: "<b>&title</b>\x00]]>", Subtitle: "</svg><script>alert(3)</script>", Unit: `sam"ples<(x)`}
	out := renderSVG(t, stacks, o)
	root := parseSVG(t, out)
	frames := framesOf(t, root)
	if len(frames) != 2+2*len(hostile) {
		t.Fatalf("%d frames, want %d", len(frames), 2+2*len(hostile))
	}
	// The unit's parenthesis is changed so that the name is the tooltip
	// before the last " (...)".
	for i, h := range hostile {
		f := byName(t, frames, h.shown)
		wantTitle := fmt.Sprintf(`%s (%d sam"ples<[x], `, h.shown, 100+i)
		if !strings.HasPrefix(f.title, wantTitle) {
			t.Errorf("title %q, want it to start with %q", f.title, wantTitle)
		}
		if f.text != "" && !strings.HasPrefix(h.shown, strings.TrimSuffix(f.text, "..")) {
			t.Errorf("label %q of %q", f.text, h.shown)
		}
	}
	var title, subtitle string
	root.walk(func(n *xnode) {
		switch n.attr("class") {
		case "title":
			title = n.Text
		case "subtitle":
			subtitle = n.Text
		}
	})
	if title != `<b>&title</b>\x00]]>` || subtitle != "</svg><script>alert(3)</script>" {
		t.Errorf("title %q, subtitle %q", title, subtitle)
	}
	// Nothing from the names is markup: one script, one CDATA section.
	for s, n := range map[string]int{"<script": 1, "</script>": 1, "]]>": 1, "<![CDATA[": 1, "<b>": 0, "<x>": 0, "\x00": 0} {
		if got := bytes.Count(out, []byte(s)); got != n {
			t.Errorf("%q occurs %d times in the svg, want %d", s, got, n)
		}
	}
	var elems []string
	root.walk(func(n *xnode) { elems = append(elems, n.XMLName.Local) })
	for _, e := range elems {
		if !slices.Contains([]string{"svg", "style", "defs", "linearGradient", "stop", "rect", "text", "g", "title", "script"}, e) {
			t.Errorf("unexpected element <%s>", e)
		}
	}

	// The same in a fragment, with a hostile id.
	frag, err := Fragment(stacks, o, `x" onload="alert(1)`)
	if err != nil {
		t.Fatal(err)
	}
	froot := parseSVG(t, []byte(frag))
	if id := froot.attr("id"); id != "fg-x_22_20onload_3D_22alert_281_29-svg" || froot.has("onload") {
		t.Errorf("fragment id %q", id)
	}
	if got := len(framesOf(t, froot)); got != len(frames) {
		t.Errorf("%d frames in the fragment, %d in the svg", got, len(frames))
	}
}

func TestEmpty(t *testing.T) {
	for name, stacks := range map[string][]Stack{
		"nil":    nil,
		"empty":  {},
		"zeroes": {{Frames: []string{"a", "b"}}, {Frames: []string{"c"}, Value: 0}},
		"diff":   {{Frames: []string{"gone"}, Base: 10}},
	} {
		t.Run(name, func(t *testing.T) {
			out := renderSVG(t, stacks, Options{Diff: name == "diff"})
			root := parseSVG(t, out)
			if n := len(framesOf(t, root)); n != 0 {
				t.Errorf("%d frames", n)
			}
			var said bool
			root.walk(func(n *xnode) {
				said = said || n.XMLName.Local == "text" && n.Text == "No stacks to draw"
				if n.XMLName.Local == "script" {
					t.Error("an empty drawing has a script")
				}
			})
			if !said {
				t.Errorf("the drawing does not say it is empty:\n%s", out)
			}
			frag, err := Fragment(stacks, Options{}, "e")
			if err != nil {
				t.Fatal(err)
			}
			parseSVG(t, []byte(frag))
		})
	}
}

func TestDiff(t *testing.T) {
	stacks := []Stack{
		{Frames: []string{"main", "grow"}, Value: 800, Base: 200},
		{Frames: []string{"main", "grow2"}, Value: 300},
		{Frames: []string{"main", "shrink"}, Value: 100, Base: 700},
		{Frames: []string{"main", "same"}, Value: 100, Base: 100},
		{Frames: []string{"main", "gone"}, Base: 500},
	}
	frames := framesOf(t, parseSVG(t, renderSVG(t, stacks, Options{Diff: true})))
	if len(frames) != 6 {
		t.Fatalf("%d frames, want 6 (not the one gone)", len(frames))
	}
	for _, c := range []struct {
		name, fill, title string
		value             float64
	}{
		{"grow", "rgb(255,0,0)", "grow (800 samples, 61.54%; +46.15%)", 800},
		{"grow2", "rgb(255,105,105)", "grow2 (300 samples, 23.08%; +23.08%)", 300},
		{"shrink", "rgb(0,0,255)", "shrink (100 samples, 7.69%; -46.15%)", 100},
		{"same", "rgb(255,255,255)", "same (100 samples, 7.69%; 0.00%)", 100},
		{"main", "rgb(140,140,255)", "main (1,300 samples, 100.00%; -15.38%)", 1300}, // shrank by 200 of at most 600: pale blue
	} {
		f := byName(t, frames, c.name)
		if f.fill != c.fill || f.title != c.title {
			t.Errorf("%s: %s %q, want %s %q", c.name, f.fill, f.title, c.fill, c.title)
		}
		if want := c.value * 1180 / 1300; math.Abs(f.w-want) > 0.006 {
			t.Errorf("%s: %v px wide, want %.2f (by Value)", c.name, f.w, want)
		}
	}
	for _, f := range frames {
		r, g, b := f.rgb(t)
		if f.name == "grow" || f.name == "grow2" {
			if r != 255 || g != b || g >= 255 {
				t.Errorf("%s grew but is %s, not red", f.name, f.fill)
			}
		}
		if f.name == "shrink" || f.name == "main" {
			if b != 255 || r != g || r >= 255 {
				t.Errorf("%s shrank but is %s, not blue", f.name, f.fill)
			}
		}
	}
}

func TestMinWidth(t *testing.T) {
	stacks := folded("big;deep 1000000", "tiny;t1;t2;t3;t4 10", "small 1000") // tiny is 0.0118 px, small 1.18
	heights := map[float64]float64{}
	for _, c := range []struct {
		min  float64
		want []string
	}{
		{0, []string{"all", "big", "deep", "small"}},
		{0.1, []string{"all", "big", "deep", "small"}},
		{-1, []string{"all", "big", "deep", "small", "tiny", "t1", "t2", "t3", "t4"}},
		{2, []string{"all", "big", "deep"}},
		{1e9, []string{"all"}},
	} {
		root := parseSVG(t, renderSVG(t, stacks, Options{MinWidth: c.min}))
		var names []string
		for _, f := range framesOf(t, root) {
			names = append(names, f.name)
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("MinWidth %v: frames %q, want %q", c.min, names, c.want)
		}
		heights[c.min] = float(t, root.attr("height"))
	}
	if heights[0] != 70+3*16 || heights[-1] != 70+6*16 || heights[1e9] != 70+16 {
		t.Errorf("heights %v: not those of the deepest frame drawn", heights)
	}
}

func TestDeterministic(t *testing.T) {
	a := renderSVG(t, known, Options{Subtitle: "s"})
	if b := renderSVG(t, known, Options{Subtitle: "s"}); !bytes.Equal(a, b) {
		t.Error("two renderings of the same stacks differ")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(known)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if b := renderSVG(t, shuffled, Options{Subtitle: "s"}); !bytes.Equal(a, b) {
			t.Fatal("the order of the stacks changes the drawing")
		}
	}
	if b := renderSVG(t, Merge(known), Options{Subtitle: "s"}); !bytes.Equal(a, b) {
		t.Error("merged stacks draw differently")
	}
}

func TestFragment(t *testing.T) {
	full := string(renderSVG(t, known, Options{}))
	a, err := Fragment(known, Options{}, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Fragment(folded("x;y 1", "x;z 2"), Options{}, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(a), "<svg ") {
		t.Errorf("a fragment starts with %.20q", a)
	}
	// The fragment is the drawing without the prolog, with its own prefix.
	body := full[strings.Index(full, "<svg"):]
	if strings.ReplaceAll(body, "fg-", "fg-a-") != string(a) {
		t.Error("the fragment is not the svg with prefixed ids")
	}

	ids := map[string]string{}
	for name, frag := range map[string]string{"a": string(a), "b": string(b)} {
		root := parseSVG(t, []byte(frag))
		rootID := root.attr("id")
		if rootID != "fg-"+name+"-svg" {
			t.Errorf("fragment %s: root id %q", name, rootID)
		}
		root.walk(func(n *xnode) {
			if id := n.attr("id"); id != "" {
				if other, ok := ids[id]; ok {
					t.Errorf("id %q in fragments %s and %s", id, other, name)
				}
				ids[id] = name
				if !strings.HasPrefix(id, "fg-"+name+"-") {
					t.Errorf("fragment %s: id %q without its prefix", name, id)
				}
			}
			for _, a := range n.Attrs {
				for _, m := range regexp.MustCompile(`url\(#([^)]*)\)`).FindAllStringSubmatch(a.Value, -1) {
					if !strings.HasPrefix(m[1], "fg-"+name+"-") {
						t.Errorf("fragment %s refers to #%s", name, m[1])
					}
				}
			}
			if n.XMLName.Local == "style" {
				for _, line := range strings.Split(strings.TrimSpace(n.Text), "\n") {
					sel, _, _ := strings.Cut(line, "{")
					for _, s := range strings.Split(sel, ",") {
						if !strings.HasPrefix(strings.TrimSpace(s), "#"+rootID+" ") {
							t.Errorf("fragment %s: CSS rule %q is not scoped to its drawing", name, s)
						}
					}
				}
			}
		})
	}
	if len(ids) < 4 {
		t.Errorf("ids %v", ids)
	}
	// Distinct ids give distinct prefixes.
	seen := map[string]string{}
	for _, id := range []string{"", "a", "a b", "a_b", "a_20b", "a-b", "A", "é", "\x00"} {
		p := encodeID(id)
		if o, ok := seen[p]; ok {
			t.Errorf("ids %q and %q both give %q", o, id, p)
		}
		seen[p] = id
		if strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			t.Errorf("id %q gives %q", id, p)
		}
	}
}

func TestScriptHasNoCDATAEnd(t *testing.T) {
	if strings.Contains(script, "]]>") || strings.Contains(script, "`") {
		t.Error("the script would end its CDATA section")
	}
	if strings.Contains(scriptFor("fg-svg", 1200), "__") {
		t.Error("a placeholder is left in the script")
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestErrors(t *testing.T) {
	if err := Render(io.Discard, known, Options{Width: 50}); err == nil {
		t.Error("a 50 px wide graph was drawn")
	}
	huge := []Stack{{Frames: []string{"a"}, Value: math.MaxUint64}, {Frames: []string{"b"}, Value: 1}}
	if err := Render(io.Discard, huge, Options{}); err == nil || !strings.Contains(err.Error(), "add up") {
		t.Errorf("overflowing total: %v", err)
	}
	full := errors.New("disk full")
	if err := Render(failWriter{full}, known, Options{}); !errors.Is(err, full) {
		t.Errorf("write error: %v", err)
	}
	if _, err := Fragment(huge, Options{}, "x"); err == nil {
		t.Error("Fragment: no error for an overflowing total")
	}
}

func TestMerge(t *testing.T) {
	in := []Stack{
		{Frames: []string{"a", "b"}, Value: 1, Base: 2},
		{Frames: []string{"a"}, Value: 4},
		{Frames: []string{"a", "b"}, Value: 10, Base: 20},
		{Frames: []string{"a;b"}, Value: 100}, // not the path a, b
		{Frames: []string{"c"}, Value: math.MaxUint64},
		{Frames: []string{"c"}, Value: 5, Base: 1},
		{Value: 7},
	}
	got := Merge(in)
	want := []Stack{
		{Value: 7},
		{Frames: []string{"a"}, Value: 4},
		{Frames: []string{"a", "b"}, Value: 11, Base: 22},
		{Frames: []string{"a;b"}, Value: 100},
		{Frames: []string{"c"}, Value: math.MaxUint64, Base: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Merge: %v", got)
	}
	for i := range want {
		if !slices.Equal(got[i].Frames, want[i].Frames) || got[i].Value != want[i].Value || got[i].Base != want[i].Base {
			t.Errorf("Merge[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestClip(t *testing.T) {
	name := "a_very_long_function_name_éèà"
	for _, c := range []struct {
		width float64
		want  string
	}{
		{10, ""},
		{24.3, "a.."}, // 3 characters
		{24.1, ""},
		{50, "a_ve.."},
		{500, name},
	} {
		if got := clip(name, c.width); got != c.want {
			t.Errorf("clip(%v px) = %q, want %q", c.width, got, c.want)
		}
	}
	if got := clip("éèàéèàéèà", 60); got != "éèàéèà.." {
		t.Errorf("clip counts bytes, not characters: %q", got)
	}
}
