package flamegraph

import (
	"strconv"
	"strings"
)

// scriptFor returns the inline script of the drawing whose root element
// has id svgID (letters, digits, '-' and '_' only: see encodeID). It holds
// no text from the stacks: it reads the names back from the frames'
// tooltips in the DOM, and writes them only as textContent.
func scriptFor(svgID string, width int) string {
	return strings.NewReplacer(
		"__ID__", svgID,
		"__XPAD__", strconv.Itoa(xpad),
		"__FW__", strconv.Itoa(width-2*xpad),
		"__CW__", strconv.FormatFloat(charWidth, 'f', -1, 64),
		"__MATCH__", matchColor,
	).Replace(script)
}

// script makes the drawing interactive, as flamegraph.pl's does:
//
//   - a click on a frame zooms to it: it and its subtree are stretched to
//     the full width, its ancestors are drawn full width and greyed, the
//     other frames are hidden; "Reset Zoom", or a click on the root, undoes
//     it;
//   - "Search" (or Ctrl-F, F3) asks for a regular expression, paints the
//     frames whose name matches it magenta and shows the share of the
//     total they cover (nested hits counted once); clicking it again
//     clears the search;
//   - hovering a frame shows its tooltip in the details line.
//
// It exposes the same on the root element as svg.flamegraph (zoom(el),
// unzoom(), search(regexp) returning the percentage, clearSearch()) for
// pages that embed the drawing and for tests. It must not contain the
// end of a CDATA section.
const script = `(function () {
"use strict";
var svg = document.getElementById("__ID__");
if (!svg || svg.flamegraph) return;
var XPAD = __XPAD__, FW = __FW__, CW = __CW__, MATCH = "__MATCH__";
var total = Number(svg.getAttribute("data-total"));
var unzoomBtn = svg.querySelector(".unzoom"), searchBtn = svg.querySelector(".search");
var matched = svg.querySelector(".matched"), details = svg.querySelector(".details");
var frames = [], index = new Map();
var gs = svg.querySelectorAll("g.f");
for (var i = 0; i < gs.length; i++) {
	var g = gs[i], r = g.querySelector("rect"), t = g.querySelector("text"), title = g.querySelector("title");
	if (!r || !t) continue;
	var label = title ? title.textContent : "";
	index.set(g, frames.length);
	frames.push({
		g: g, r: r, t: t, label: label, name: label.replace(/ \([^()]*\)$/, ""),
		x: Number(g.getAttribute("data-x")), w: Number(g.getAttribute("data-w")), n: Number(g.getAttribute("data-n")),
		rx: r.getAttribute("x"), rw: r.getAttribute("width"), tx: t.getAttribute("x"), tt: t.textContent,
		fill: r.getAttribute("fill")
	});
}

function round2(v) { return Math.round(v * 100) / 100; }

// clip fits a name to a width as the renderer does.
function clip(name, w) {
	var chars = Math.floor((w - 3) / CW);
	if (chars < 3) return "";
	var cps = Array.from(name);
	if (cps.length <= chars) return name;
	return cps.slice(0, chars - 2).join("") + "..";
}

function place(f, x, w) {
	x = round2(x);
	w = round2(w);
	f.r.setAttribute("x", String(x));
	f.r.setAttribute("width", String(w));
	f.t.setAttribute("x", String(round2(x + 3)));
	f.t.textContent = clip(f.name, w);
}

function restore(f) {
	f.g.classList.remove("hide", "parent");
	f.r.setAttribute("x", f.rx);
	f.r.setAttribute("width", f.rw);
	f.t.setAttribute("x", f.tx);
	f.t.textContent = f.tt;
}

// Frames are in preorder: the subtree of frame i is frames i to i+n.
function zoom(i) {
	if (!(i > 0 && i < frames.length)) {
		unzoom();
		return;
	}
	var z = frames[i], scale = FW / z.w;
	for (var k = 0; k < frames.length; k++) {
		var f = frames[k], cl = f.g.classList;
		if (k >= i && k <= i + z.n) {
			cl.remove("hide", "parent");
			place(f, XPAD + (f.x - z.x) * scale, f.w * scale);
		} else if (k < i && k + f.n >= i) {
			cl.remove("hide");
			cl.add("parent");
			place(f, XPAD, FW);
		} else {
			cl.remove("parent");
			cl.add("hide");
		}
	}
	unzoomBtn.classList.remove("hide");
}

function unzoom() {
	frames.forEach(restore);
	unzoomBtn.classList.add("hide");
}

var searching = false;

function clearSearch() {
	frames.forEach(function (f) { f.r.setAttribute("fill", f.fill); });
	searching = false;
	searchBtn.textContent = "Search";
	searchBtn.classList.remove("active");
	matched.textContent = "";
}

function search(term) {
	var re;
	try {
		re = new RegExp(term);
	} catch (e) {
		clearSearch();
		matched.textContent = "Not a regular expression";
		return null;
	}
	var sum = 0, end = -1;
	for (var k = 0; k < frames.length; k++) {
		var f = frames[k];
		if (re.test(f.name)) {
			f.r.setAttribute("fill", MATCH);
			if (k > end) {
				sum += f.w;
				end = k + f.n;
			}
		} else {
			f.r.setAttribute("fill", f.fill);
		}
	}
	searching = true;
	searchBtn.textContent = "Reset Search";
	searchBtn.classList.add("active");
	var pct = total > 0 ? 100 * sum / total : 0;
	matched.textContent = "Matched: " + pct.toFixed(1) + "%";
	return pct;
}

function ask() {
	var term = window.prompt("Search for functions (a regular expression, e.g. ^ext4_)", "");
	if (term) search(term);
	else if (term === "") clearSearch();
}

function frameOf(el) {
	for (; el && el !== svg; el = el.parentNode) {
		if (index.has(el)) return index.get(el);
	}
	return -1;
}

svg.addEventListener("click", function (e) {
	if (e.target === unzoomBtn) {
		unzoom();
	} else if (e.target === searchBtn) {
		if (searching) clearSearch();
		else ask();
	} else {
		var i = frameOf(e.target);
		if (i >= 0) zoom(i);
	}
});

var hover = false, standalone = document.documentElement === svg;
svg.addEventListener("mouseover", function (e) {
	var i = frameOf(e.target);
	details.textContent = i >= 0 ? "Function: " + frames[i].label : "";
});
svg.addEventListener("mouseenter", function () { hover = true; });
svg.addEventListener("mouseleave", function () {
	hover = false;
	details.textContent = "";
});
// Ctrl-F searches the drawing opened by itself, and in a page the one
// under the pointer (the browser's own search is left to the others).
window.addEventListener("keydown", function (e) {
	if (!standalone && !hover) return;
	if (e.key === "F3" || ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F"))) {
		e.preventDefault();
		ask();
	}
});

svg.flamegraph = {
	zoom: function (el) { zoom(frameOf(el)); },
	unzoom: unzoom,
	search: search,
	clearSearch: clearSearch
};
})();
`
