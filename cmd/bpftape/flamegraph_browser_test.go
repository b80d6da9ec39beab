//go:build interop

package main

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/replay/flamegraph"
)

// fgBrowserStacks is a profile of 12,000 samples: mid has two children,
// one with a name too long for its frame until zoomed, and a kernel path.
func fgBrowserStacks() []flamegraph.Stack {
	var out []flamegraph.Stack
	for _, s := range []struct {
		path  string
		value uint64
	}{
		{"main;top;mid;leaf", 4500},
		{"main;top;mid;sibling_with_a_long_name_that_is_clipped", 1500},
		{"main;top;other", 3000},
		{"main;top;other;entry_SYSCALL_64_[k];do_syscall_64_[k]", 2000},
		{"main;aaa", 1000},
	} {
		out = append(out, flamegraph.Stack{Frames: strings.Split(s.path, ";"), Value: s.value})
	}
	return out
}

// fgJS defines, in the page, st(svg) (the state of every frame of a
// drawing, by name) and fr(svg, name) (a frame's <g>).
const fgJS = `
var fr = function (svg, name) {
	return [...svg.querySelectorAll("g.f")].find(g => g.querySelector("title").textContent.replace(/ \([^()]*\)$/, "") === name);
};
var st = function (svg) {
	var out = {};
	svg.querySelectorAll("g.f").forEach(g => {
		var r = g.querySelector("rect"), cs = getComputedStyle(g);
		out[g.querySelector("title").textContent.replace(/ \([^()]*\)$/, "")] = {
			x: +r.getAttribute("x"), w: +r.getAttribute("width"), fill: r.getAttribute("fill"),
			cls: g.getAttribute("class"), shown: cs.display !== "none", opacity: +cs.opacity,
			text: g.querySelector("text").textContent, title: g.querySelector("title").textContent
		};
	});
	return out;
};
var shown = function (el) { return getComputedStyle(el).display !== "none"; };
var click = function (el) { el.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, view: window})); };
`

type fgFrame struct {
	X, W    float64
	Fill    string
	Cls     string
	Shown   bool
	Opacity float64
	Text    string
	Title   string
}

// fgEval evaluates body (statements ending in a return) in a function
// with fgJS's helpers and decodes the JSON of what it returns.
func fgEval(p *page, body string, v any) {
	p.c.t.Helper()
	var raw string
	p.eval("(function () {"+fgJS+body+"})()", &raw)
	if err := jsonUnmarshal(raw, v); err != nil {
		p.c.t.Fatalf("%v in %s", err, raw)
	}
}

func fgNear(a, b float64) bool { return math.Abs(a-b) < 0.011 }

func fgNoProblems(t *testing.T, p *page, pageURL string) {
	t.Helper()
	msgs, urls := p.problems()
	if len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
	if len(urls) != 1 || urls[0] != pageURL {
		t.Errorf("requests %v, want just the page", urls)
	}
}

func TestFlameGraphBrowser(t *testing.T) {
	if _, err := chromiumPath(); err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): cannot check the flame graph in a browser")
	}
	var svg bytes.Buffer
	if err := flamegraph.Render(&svg, fgBrowserStacks(), flamegraph.Options{Title: "CPU", Subtitle: "test.arrow"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flame.svg")
	if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startChromium(t).newPage(1280, 800)
	pageURL := (&url.URL{Scheme: "file", Path: path}).String()
	p.navigate(pageURL)

	type state struct {
		API, Unzoom, Searching bool
		Matched, SearchText    string
		Details                string
		Pct                    *float64
		Asked                  string
		Prevented              bool
		Frames                 map[string]fgFrame
	}
	const snap = `return JSON.stringify({api: typeof svg.flamegraph === "object" && typeof svg.flamegraph.search === "function",
		unzoom: shown(svg.querySelector(".unzoom")), matched: svg.querySelector(".matched").textContent,
		searchText: svg.querySelector(".search").textContent, details: svg.querySelector(".details").textContent,
		pct: window.pct === undefined ? null : window.pct, asked: window.asked || "", prevented: !!window.prevented,
		frames: st(svg)});`
	get := func(action string) state {
		t.Helper()
		var s state
		fgEval(p, "var svg = document.documentElement;\n"+action+"\n"+snap, &s)
		return s
	}

	before := get("")
	if !before.API || before.Unzoom || len(before.Frames) != 10 {
		t.Fatalf("api %v, reset zoom shown %v, %d frames", before.API, before.Unzoom, len(before.Frames))
	}
	if f := before.Frames["all"]; f.X != 10 || f.W != 1180 || f.Title != "all (12,000 samples, 100.00%)" {
		t.Errorf("root %+v", f)
	}
	long := "sibling_with_a_long_name_that_is_clipped"
	if f := before.Frames[long]; !strings.HasSuffix(f.Text, "..") || !fgNear(f.W, 147.5) {
		t.Errorf("%s before zoom: %+v", long, f)
	}

	// Zoom to mid: it and its subtree take the whole width, its ancestors
	// stay, full width and greyed, the rest is hidden.
	z := get(`click(fr(svg, "mid").querySelector("rect"));`)
	if !z.Unzoom {
		t.Error("no Reset Zoom after a zoom")
	}
	for name, want := range map[string][2]float64{"mid": {10, 1180}, "leaf": {10, 885}, long: {895, 295}} {
		if f := z.Frames[name]; !fgNear(f.X, want[0]) || !fgNear(f.W, want[1]) || !f.Shown || strings.Contains(f.Cls, "parent") {
			t.Errorf("zoomed to mid: %s is %+v, want at %v, %v px wide", name, f, want[0], want[1])
		}
	}
	if f := z.Frames[long]; f.Text != long {
		t.Errorf("zoomed, the label of %s is %q", long, f.Text)
	}
	for _, name := range []string{"all", "main", "top"} {
		if f := z.Frames[name]; f.X != 10 || f.W != 1180 || !f.Shown || !strings.Contains(f.Cls, "parent") || f.Opacity != 0.5 {
			t.Errorf("zoomed to mid: ancestor %s is %+v", name, f)
		}
	}
	for _, name := range []string{"aaa", "other", "entry_SYSCALL_64", "do_syscall_64"} {
		if f := z.Frames[name]; f.Shown {
			t.Errorf("zoomed to mid: %s is shown: %+v", name, f)
		}
	}

	// Reset Zoom puts everything back.
	r := get(`click(svg.querySelector(".unzoom"));`)
	if r.Unzoom {
		t.Error("Reset Zoom still shown after a reset")
	}
	for name, f := range before.Frames {
		if r.Frames[name] != f {
			t.Errorf("after Reset Zoom, %s is %+v, was %+v", name, r.Frames[name], f)
		}
	}
	// A click on the root resets too.
	get(`click(fr(svg, "do_syscall_64").querySelector("rect"));`)
	if r := get(`click(fr(svg, "all").querySelector("rect"));`); r.Unzoom || r.Frames["aaa"] != before.Frames["aaa"] {
		t.Errorf("a click on the root did not reset the zoom: %+v", r.Frames["aaa"])
	}

	// Search from the control, with the prompt answered.
	const magenta = "rgb(230,0,230)"
	s := get(`window.prompt = function (msg) { window.asked = msg; return "^(leaf|other)$"; };
		click(svg.querySelector(".search"));`)
	if s.Asked == "" {
		t.Error("Search did not prompt")
	}
	for name, f := range s.Frames {
		hit := name == "leaf" || name == "other"
		if hit && f.Fill != magenta || !hit && f.Fill != before.Frames[name].Fill {
			t.Errorf("search ^(leaf|other)$: %s is %s", name, f.Fill)
		}
	}
	if want := fmt.Sprintf("Matched: %.1f%%", 100*9500/12000.0); s.Matched != want || s.SearchText != "Reset Search" {
		t.Errorf("after a search: %q, control %q; want %q", s.Matched, s.SearchText, want)
	}

	// Nested hits count once: "o" matches top and three frames above it.
	s = get(`window.pct = svg.flamegraph.search("o");`)
	var hits []string
	for name, f := range s.Frames {
		if f.Fill == magenta {
			hits = append(hits, name)
		}
	}
	if len(hits) != 4 || s.Pct == nil || !fgNear(*s.Pct, 100*11000/12000.0) || s.Matched != "Matched: 91.7%" {
		t.Errorf("search o: %v highlighted, %v, %q", hits, s.Pct, s.Matched)
	}

	// Clicking the control again clears the search.
	s = get(`click(svg.querySelector(".search"));`)
	for name, f := range s.Frames {
		if f.Fill != before.Frames[name].Fill {
			t.Errorf("after Reset Search, %s is %s", name, f.Fill)
		}
	}
	if s.Matched != "" || s.SearchText != "Search" {
		t.Errorf("after Reset Search: %q, control %q", s.Matched, s.SearchText)
	}

	// Ctrl-F prompts too.
	s = get(`window.asked = "";
		window.prompt = function (msg) { window.asked = msg; return "aaa"; };
		var ev = new KeyboardEvent("keydown", {key: "f", ctrlKey: true, bubbles: true, cancelable: true});
		window.dispatchEvent(ev);
		window.prevented = ev.defaultPrevented;`)
	if s.Asked == "" || !s.Prevented || s.Matched != "Matched: 8.3%" || s.Frames["aaa"].Fill != magenta {
		t.Errorf("Ctrl-F: asked %q, default prevented %v, %q, aaa %s", s.Asked, s.Prevented, s.Matched, s.Frames["aaa"].Fill)
	}

	// A bad regular expression is said, not thrown.
	s = get(`window.pct = svg.flamegraph.search("(");`)
	if s.Pct != nil || s.Matched != "Not a regular expression" {
		t.Errorf("search (: %v, %q", s.Pct, s.Matched)
	}

	// Hovering a frame shows its tooltip in the details line.
	s = get(`fr(svg, "leaf").querySelector("rect").dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));`)
	if s.Details != "Function: leaf (4,500 samples, 37.50%)" {
		t.Errorf("details %q", s.Details)
	}

	if png := os.Getenv("BPFTAPE_FLAMEGRAPH_PNG"); png != "" {
		get(`svg.flamegraph.clearSearch(); svg.flamegraph.search("sys"); click(fr(svg, "top").querySelector("rect"));`)
		if err := os.WriteFile(png, p.screenshot(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fgNoProblems(t, p, pageURL)
}

// TestFlameGraphFragmentsBrowser puts two fragments in one HTML page, one
// with names made to break out of the markup: their ids do not collide,
// each zooms and searches on its own, and no name runs as markup.
func TestFlameGraphFragmentsBrowser(t *testing.T) {
	if _, err := chromiumPath(); err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): cannot check the flame graph in a browser")
	}
	hostile := []string{
		`<img src=x onerror="window.pwned=1">`,
		`</script><script>window.pwned=2</script>`,
		`]]><script>window.pwned=3</script>`,
		`</svg><b id="fg-one-svg">x</b>`,
	}
	var b []flamegraph.Stack
	for i, h := range hostile {
		b = append(b, flamegraph.Stack{Frames: []string{"main", h}, Value: uint64(1000 * (i + 1))})
	}
	one, err := flamegraph.Fragment(fgBrowserStacks(), flamegraph.Options{Title: "one"}, "one")
	if err != nil {
		t.Fatal(err)
	}
	two, err := flamegraph.Fragment(b, flamegraph.Options{Title: "two", Diff: false}, "two words")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>two flame graphs</title></head>
<body><h1>One</h1>{{.One}}<h1>Two</h1>{{.Two}}</body></html>
`))
	var page bytes.Buffer
	if err := tmpl.Execute(&page, map[string]template.HTML{"One": one, "Two": two}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startChromium(t).newPage(1366, 900)
	pageURL := (&url.URL{Scheme: "file", Path: path}).String()
	p.navigate(pageURL)

	type side struct {
		API, Unzoom bool
		Matched     string
		Frames      map[string]fgFrame
	}
	type state struct {
		IDs, UniqueIDs, SVGs, Scripts, Imgs, Bold int
		Pwned                                     any
		H1Font                                    string
		Asked                                     int
		One, Two                                  side
	}
	const snap = `var side = function (svg) { return {api: typeof svg.flamegraph === "object", unzoom: shown(svg.querySelector(".unzoom")),
			matched: svg.querySelector(".matched").textContent, frames: st(svg)}; };
		var ids = [...document.querySelectorAll("[id]")].map(e => e.id);
		return JSON.stringify({ids: ids.length, uniqueIDs: new Set(ids).size, svgs: document.querySelectorAll("svg").length,
			scripts: document.scripts.length + document.querySelectorAll("svg script").length, imgs: document.querySelectorAll("img").length,
			bold: document.querySelectorAll("b").length, pwned: window.pwned === undefined ? null : window.pwned,
			h1Font: getComputedStyle(document.querySelector("h1")).fontFamily, asked: window.asked || 0,
			one: side(one), two: side(two)});`
	get := func(action string) state {
		t.Helper()
		var s state
		fgEval(p, `var one = document.getElementById("fg-one-svg"), two = document.getElementById("fg-two_20words-svg");
			window.prompt = function () { window.asked = (window.asked || 0) + 1; return window.answer; };
			`+action+"\n"+snap, &s)
		return s
	}

	before := get("")
	if before.SVGs != 2 || !before.One.API || !before.Two.API || len(before.One.Frames) != 10 || len(before.Two.Frames) != 2+len(hostile) {
		t.Fatalf("%d svgs, apis %v %v, %d and %d frames", before.SVGs, before.One.API, before.Two.API, len(before.One.Frames), len(before.Two.Frames))
	}
	if before.IDs != before.UniqueIDs || before.IDs != 4 {
		t.Errorf("%d ids, %d distinct: want 4 (a drawing and its gradient, twice)", before.IDs, before.UniqueIDs)
	}
	// document.scripts counts HTML scripts, the second term SVG ones.
	if before.Pwned != nil || before.Imgs != 0 || before.Bold != 0 || before.Scripts != 2 {
		t.Errorf("names ran as markup: pwned %v, %d img, %d b, %d scripts", before.Pwned, before.Imgs, before.Bold, before.Scripts)
	}
	for _, h := range hostile {
		if f, ok := before.Two.Frames[h]; !ok || !strings.HasPrefix(f.Title, h+" (") {
			t.Errorf("no frame titled %q: %+v", h, f)
		}
	}
	if strings.Contains(before.H1Font, "Verdana") {
		t.Errorf("the drawings' style leaks into the page: h1 font %q", before.H1Font)
	}

	// A zoom in one leaves the other as it was.
	z := get(`click(fr(one, "mid").querySelector("rect"));`)
	if f := z.One.Frames["mid"]; !z.One.Unzoom || f.X != 10 || f.W != 1180 || z.One.Frames["aaa"].Shown {
		t.Errorf("zoom in one: mid %+v, reset shown %v", f, z.One.Unzoom)
	}
	if z.Two.Unzoom || !fgSameFrames(z.Two.Frames, before.Two.Frames) {
		t.Error("a zoom in one changed two")
	}
	z = get(`click(fr(two, ` + fgJSString(hostile[3]) + `).querySelector("rect"));`)
	if f := z.Two.Frames[hostile[3]]; !z.Two.Unzoom || f.W != 1180 {
		t.Errorf("zoom in two: %+v", f)
	}
	if f := z.One.Frames["mid"]; f.W != 1180 {
		t.Errorf("a zoom in two changed the zoom of one: mid %+v", f)
	}
	z = get(`click(one.querySelector(".unzoom"));`)
	if z.One.Unzoom || !fgSameFrames(z.One.Frames, before.One.Frames) || !z.Two.Unzoom {
		t.Error("Reset Zoom in one did not reset just one")
	}
	get(`click(two.querySelector(".unzoom"));`)

	// A search in two leaves one alone.
	s := get(`window.answer = "script"; click(two.querySelector(".search"));`)
	if s.Asked != 1 || s.Two.Matched != fmt.Sprintf("Matched: %.1f%%", 100*5000/10000.0) || s.One.Matched != "" {
		t.Errorf("search in two: asked %d, two %q, one %q", s.Asked, s.Two.Matched, s.One.Matched)
	}
	if !fgSameFrames(s.One.Frames, before.One.Frames) {
		t.Error("a search in two painted one")
	}

	// Ctrl-F belongs to the drawing under the pointer, and to the browser
	// when there is none.
	s = get(`window.answer = "leaf"; window.asked = 0;
		var ev = new KeyboardEvent("keydown", {key: "f", ctrlKey: true, bubbles: true, cancelable: true});
		window.dispatchEvent(ev);
		if (ev.defaultPrevented) window.asked = 100;`)
	if s.Asked != 0 {
		t.Errorf("Ctrl-F outside the drawings was taken (%d)", s.Asked)
	}
	s = get(`one.dispatchEvent(new MouseEvent("mouseenter"));
		window.dispatchEvent(new KeyboardEvent("keydown", {key: "f", ctrlKey: true, bubbles: true, cancelable: true}));
		one.dispatchEvent(new MouseEvent("mouseleave"));`)
	if s.Asked != 1 || s.One.Matched != fmt.Sprintf("Matched: %.1f%%", 100*4500/12000.0) || s.Two.Matched != "Matched: 50.0%" {
		t.Errorf("Ctrl-F over one: asked %d, one %q, two %q", s.Asked, s.One.Matched, s.Two.Matched)
	}
	fgNoProblems(t, p, pageURL)
}

func fgSameFrames(a, b map[string]fgFrame) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fgJSString quotes s as a JavaScript string literal (JSON's is one).
func fgJSString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == '<' || r == '>':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
