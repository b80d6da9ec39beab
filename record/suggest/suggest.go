// Package suggest picks "did you mean" candidates for a mistyped name, so
// that errors about unknown probes, symbols or events can name what exists.
package suggest

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Match tiers, best first.
const (
	tierFold   = iota // equal ignoring case
	tierSubstr        // one contains the other
	tierEdit          // within the edit distance threshold
)

// Closest returns up to n distinct candidates that look like name, best
// first: equal ignoring case, then containing (or contained in) name, then
// within a small edit distance, ties by distance and then alphabetically.
func Closest(name string, candidates []string, n int) []string {
	if n <= 0 || name == "" || len(candidates) == 0 {
		return nil
	}
	lname := strings.ToLower(name)
	threshold := utf8.RuneCountInString(name) / 3
	if threshold < 1 {
		threshold = 1
	}
	type scored struct {
		s          string
		tier, dist int
	}
	var out []scored
	seen := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		if c == "" || c == name || seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		var sc scored
		sc.s = c
		switch {
		case lc == lname:
			sc.tier = tierFold
		case strings.Contains(lc, lname) && utf8.RuneCountInString(lname) >= 2,
			strings.Contains(lname, lc) && utf8.RuneCountInString(lc) >= 3:
			sc.tier = tierSubstr
			sc.dist = Distance(lname, lc)
		default:
			// The distance is at least the length difference: skip the
			// quadratic computation for hopeless candidates.
			if d := len(lc) - len(lname); d > threshold || -d > threshold {
				continue
			}
			sc.dist = Distance(lname, lc)
			if sc.dist > threshold {
				continue
			}
			sc.tier = tierEdit
		}
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		return a.s < b.s
	})
	if len(out) > n {
		out = out[:n]
	}
	res := make([]string, len(out))
	for i, sc := range out {
		res[i] = sc.s
	}
	return res
}

// Distance is the optimal string alignment distance between a and b: the
// number of rune insertions, deletions, substitutions and transpositions of
// adjacent runes that turn a into b.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 {
		return len(rb)
	}
	if len(rb) == 0 {
		return len(ra)
	}
	// Three rows: two back (for transpositions), previous and current.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Hint formats suggestions for an error message: "" when there are none,
// otherwise `; did you mean "a", "b"?`.
func Hint(suggestions []string) string {
	if len(suggestions) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; did you mean ")
	for i, s := range suggestions {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(s))
	}
	b.WriteString("?")
	return b.String()
}
