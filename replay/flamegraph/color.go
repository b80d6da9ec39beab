package flamegraph

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// kernelSuffix marks a kernel frame in stackcollapse's output.
const kernelSuffix = "_[k]"

// hashes derives three numbers in [0, 1] from a frame's name, so that a
// function gets the same colour in every graph (flamegraph.pl --hash).
func hashes(name string) (v1, v2, v3 float64) {
	h := fnv.New64a()
	h.Write([]byte(name))
	s := h.Sum64()
	return float64(s&0xffff) / 0xffff, float64(s>>16&0xffff) / 0xffff, float64(s>>32&0xffff) / 0xffff
}

// color is a frame's fill in an ordinary graph, with flamegraph.pl's
// palettes: kernel frames ("name_[k]") orange, as its java palette draws
// them; frames that name no function but an object or an address
// ("[unknown]", "[libc.so.6+0x1234]") grey; the others in the "hot"
// palette, red to yellow.
func color(name string) string {
	v1, v2, v3 := hashes(name)
	switch {
	case strings.HasSuffix(name, kernelSuffix):
		return rgb(190+int(50*v3), 90+int(65*v3), 0)
	case strings.HasPrefix(name, "["):
		g := 170 + int(40*v1)
		return rgb(g, g, g)
	default:
		return rgb(205+int(50*v3), int(230*v1), int(55*v2))
	}
}

// diffColor is a frame's fill in a differential graph, as flamegraph.pl's
// color_scale: white when it did not change, redder the more it grew and
// bluer the more it shrank, relative to the largest change in the graph.
func diffColor(delta, maxDelta float64) string {
	r, g, b := 255, 255, 255
	switch {
	case maxDelta == 0:
	case delta > 0:
		g = int(210 * (maxDelta - delta) / maxDelta)
		b = g
	case delta < 0:
		r = int(210 * (maxDelta + delta) / maxDelta)
		g = r
	}
	return rgb(r, g, b)
}

func rgb(r, g, b int) string { return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b) }
