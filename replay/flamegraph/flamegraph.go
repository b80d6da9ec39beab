package flamegraph

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Stack is one folded stack: Frames root first (as FlameGraph's stackcollapse writes them), and its weight.
type Stack struct {
	Frames []string
	Value  uint64
	// Base is the weight in the base profile, for a differential graph (Options.Diff).
	Base uint64
}

// Options shape the drawing.
type Options struct {
	Title    string  // "Flame Graph" when empty
	Subtitle string  // optional second line (e.g. capture file and probe)
	Unit     string  // what Value counts: "samples" (default), "ns" (time: show durations like 1.23 ms), "events"
	Width    int     // default 1200
	Diff     bool    // differential: colour by Value-Base (red grew, blue shrank), widths by Value
	Inverted bool    // icicle: root at top
	MinWidth float64 // frames narrower than this many pixels are left out (default 0.1), as flamegraph.pl --minwidth
}

// Units for Options.Unit.
const (
	UnitSamples = "samples"
	UnitNs      = "ns"
	UnitEvents  = "events"
)

// MinImageWidth is the narrowest Options.Width accepted.
const MinImageWidth = 100

// Render writes a self-contained interactive SVG (inline <script>, no external resources).
func Render(w io.Writer, stacks []Stack, o Options) error {
	bw := bufio.NewWriter(w)
	if err := render(bw, stacks, o, "fg-", true); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("flamegraph: writing the svg: %w", err)
	}
	return nil
}

// Fragment returns the same SVG for embedding inside an HTML page (no XML
// prolog). Every id in it and every CSS rule of its <style> starts with a
// prefix derived from id ("fg-" and id, with bytes other than ASCII
// letters, digits and '-' written as _XX in hex, so that distinct ids give
// distinct prefixes): give each fragment on a page its own id, such as the
// name of the section it is in or a counter.
func Fragment(stacks []Stack, o Options, id string) (template.HTML, error) {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	if err := render(bw, stacks, o, "fg-"+encodeID(id)+"-", false); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("flamegraph: writing the svg: %w", err)
	}
	return template.HTML(b.String()), nil // every text from the stacks and options is escaped
}

// encodeID maps id injectively to letters, digits, '-' and '_', which are
// safe in an XML id, a CSS selector and a JavaScript string.
func encodeID(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// Merge combines the stacks with the same frames, adding their Value and
// Base (saturating at the largest uint64), and returns them sorted by
// frames, frame by frame. The result shares Frames with stacks.
func Merge(stacks []Stack) []Stack {
	idx := make(map[string]int, len(stacks))
	var out []Stack
	var key []byte
	for _, s := range stacks {
		key = key[:0]
		for _, f := range s.Frames {
			key = strconv.AppendInt(key, int64(len(f)), 10)
			key = append(key, ':')
			key = append(key, f...)
		}
		if i, ok := idx[string(key)]; ok {
			out[i].Value = satAdd(out[i].Value, s.Value)
			out[i].Base = satAdd(out[i].Base, s.Base)
			continue
		}
		idx[string(key)] = len(out)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Stack) int { return slices.Compare(a.Frames, b.Frames) })
	return out
}

func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// node is one frame of the merged tree: a function at a depth under a
// given parent, with the weight of every stack through it.
type node struct {
	name     string
	value    uint64 // width
	base     uint64 // Diff: weight in the base profile
	children []*node
	index    map[string]*node // children by name, while building
}

func (n *node) child(name string) *node {
	if c, ok := n.index[name]; ok {
		return c
	}
	if n.index == nil {
		n.index = make(map[string]*node)
	}
	c := &node{name: name}
	n.index[name] = c
	n.children = append(n.children, c)
	return c
}

// build merges the stacks by path into a tree under a root "all" that
// spans them all, children sorted by name as flamegraph.pl orders them.
func build(stacks []Stack) (*node, error) {
	root := &node{name: "all"}
	for i, s := range stacks {
		if s.Value == 0 && s.Base == 0 {
			continue
		}
		var c1, c2 uint64
		root.value, c1 = bits.Add64(root.value, s.Value, 0)
		root.base, c2 = bits.Add64(root.base, s.Base, 0)
		if c1 != 0 || c2 != 0 {
			return nil, fmt.Errorf("flamegraph: the weights of stacks 0 to %d add up to more than %d", i, uint64(math.MaxUint64))
		}
		n := root
		for _, f := range s.Frames {
			n = n.child(f)
			n.value += s.Value // no overflow: bounded by root's
			n.base += s.Base
		}
	}
	var sortTree func(n *node)
	sortTree = func(n *node) {
		n.index = nil
		slices.SortFunc(n.children, func(a, b *node) int { return cmp.Compare(a.name, b.name) })
		for _, c := range n.children {
			sortTree(c)
		}
	}
	sortTree(root)
	return root, nil
}
