// Package humanfmt formats numbers for people: durations and time offsets
// with three significant digits, counts with thousands separators or with
// a noun in the singular or plural, and sizes with binary or decimal
// prefixes. The heat maps and the report
// print with it, so that an axis and a table say the same number the same
// way.
package humanfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Duration formats ns nanoseconds with three significant digits and a unit:
// 512ns, 1.02µs, 16.4ms, 1.07s; from ten minutes on, 12m05s and 1h01m.
func Duration(ns float64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	units := []struct {
		div  float64
		name string
	}{{1, "ns"}, {1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}}
	u := units[0]
	for _, c := range units {
		if ns >= c.div {
			u = c
		}
	}
	if u.name == "s" && ns >= 600e9 {
		return neg + minutes(ns)
	}
	return neg + sig3(ns/u.div) + u.name
}

// minutes formats ns, ten minutes or more, as 12m05s or 1h01m.
func minutes(ns float64) string {
	s := int64(math.Round(ns / 1e9))
	if s >= 3600 {
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// sig3 prints x with three significant digits and no trailing zeros.
func sig3(x float64) string {
	var s string
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		s = strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	case x >= 10:
		s = strconv.FormatFloat(x, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(x, 'f', 2, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Offset formats a signed time since a start, such as a capture's:
// +0s, +250ms, +1.5s, +12m05s, -3ms.
func Offset(ns int64) string {
	if ns == 0 {
		return "+0s"
	}
	if ns < 0 {
		return Duration(float64(ns))
	}
	return "+" + Duration(float64(ns))
}

// Binary formats v with binary prefixes and three significant digits: 512,
// 1Ki, 2Mi, 1.5Gi.
func Binary(v uint64) string {
	for _, p := range []struct {
		shift uint
		name  string
	}{{60, "Ei"}, {50, "Pi"}, {40, "Ti"}, {30, "Gi"}, {20, "Mi"}, {10, "Ki"}} {
		if v >= 1<<p.shift {
			return sig3(float64(v)/float64(uint64(1)<<p.shift)) + p.name
		}
	}
	return strconv.FormatUint(v, 10)
}

// SI formats v with decimal prefixes past 9999 and three significant
// digits: 2500, 12.5k, -3M.
func SI(v int64) string {
	a := math.Abs(float64(v))
	if a < 1e4 {
		return strconv.FormatInt(v, 10)
	}
	sign := ""
	if v < 0 {
		sign = "-"
	}
	for _, p := range []struct {
		div  float64
		name string
	}{{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.div {
			return sign + sig3(a/p.div) + p.name
		}
	}
	return strconv.FormatInt(v, 10)
}

// Commas groups the digits of n by thousands: 1,041,070.
func Commas(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Plural writes n and one of two phrases after it: one for a count of 1,
// many for any other ("1 process", "3 processes", "2 events came").
func Plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatUint(n, 10) + " " + many
}

// Rate formats a rate limit of events a second as record --max-rate takes
// it: 1,000 or 2.5.
func Rate(perSecond float64) string {
	if perSecond == math.Trunc(perSecond) && perSecond >= 0 && perSecond < 1e18 {
		return Commas(uint64(perSecond))
	}
	return strconv.FormatFloat(perSecond, 'f', -1, 64)
}
