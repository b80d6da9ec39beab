// Package flamegraph draws folded stacks as an interactive flame graph in
// SVG, the way Brendan Gregg's flamegraph.pl draws them: one box per
// function on a path of calls, as wide as the weight of the stacks through
// it, callees stacked on callers.
//
// # Why our own renderer
//
// flamegraph.pl needs Perl and a file of folded stacks; a capture may be
// analysed on a machine with neither, and the report is one
// self-contained HTML file. Render writes one SVG file that needs nothing
// else: its style and script are inline, it loads no font, image or
// script, and it works offline when opened directly in a browser.
// Fragment writes the same drawing for inlining in an HTML page.
//
// # How it follows flamegraph.pl
//
//   - Stacks are merged by path: the same name at the same depth under the
//     same parent is one frame, whatever the order of the input, so Render
//     needs no Merge first (Merge is for callers that want the combined
//     stacks themselves). A root frame "all" spans the total weight.
//   - Siblings are sorted by name (byte order), not by weight, and the
//     weight of stacks that end at a frame (its own time) is drawn on the
//     frame's left, before its children, as flamegraph.pl's sorted input
//     places it.
//   - The layout is flamegraph.pl's default: 1200 px wide, 10 px margins,
//     rows of 16 px, 12 px Verdana (or DejaVu Sans, as wide). Labels
//     are clipped with ".." from an estimate of 0.59 × the font size per
//     character; frames narrower than MinWidth px (0.1 by default) are
//     left out with their subtrees (a negative MinWidth keeps them all),
//     and the height is that of the deepest frame left. A Width of 0 is
//     the default; one under MinImageWidth is an error.
//   - Colours come from a hash of the name (FNV-1a, where flamegraph.pl
//     --hash has its own), so a function has the same colour in every
//     graph: the "hot" palette (red to yellow) for most frames, orange for kernel frames (named "func_[k]" by
//     stackcollapse, shown without the suffix, as flamegraph.pl's java
//     palette draws them), and grey for frames that name an object or an
//     address rather than a function ("[unknown]", "[libc.so.6+0x1234]").
//   - A differential graph (Options.Diff, like difffolded.pl's output)
//     keeps the widths of Value and colours each frame by Value-Base
//     relative to the largest change: red grew, blue shrank, white
//     unchanged; its tooltips add the change as a share of the total.
//     Weights are not normalised: scale Base first if the profiles have
//     different totals. A frame whose Value is 0 is not drawn.
//   - Each frame's tooltip is "NAME (N samples, P%)" with the counted unit
//     (Options.Unit), or "NAME (1.23ms, P%)" for durations in ns.
//   - The script zooms on a click, with ancestors greyed and a "Reset
//     Zoom" control, and searches by regular expression ("Search", Ctrl-F)
//     painting hits magenta and showing "Matched: P%" of the total. A
//     frame left out by MinWidth stays out when zoomed, as in
//     flamegraph.pl.
//
// # Hostile names
//
// Frame names come from a capture, which may come from anywhere, so every
// text is escaped as markup, and control characters, bytes that are not
// UTF-8 and the characters XML forbids are written as visible escapes
// (\x00, \xff, as textsafe writes them): the document is well-formed XML
// whatever the names. The script holds no text from the capture: it reads
// names back from the frames' tooltips in the DOM and writes them only as
// textContent, so a name cannot become markup or code.
//
// # Embedding
//
// Every id of a drawing, and every rule of its inline <style> (which in an
// HTML page applies to the whole page), starts with a prefix: "fg-" for
// Render and "fg-" plus the id argument (encoded to letters, digits, '-'
// and '_', injectively) for Fragment, so that fragments with distinct ids
// share a page without colliding. The script finds its drawing by that id
// and exposes it as the root element's flamegraph property: zoom(el),
// unzoom(), search(regexp) and clearSearch(). In a page, Ctrl-F searches
// the drawing under the pointer and is left to the browser elsewhere.
package flamegraph
