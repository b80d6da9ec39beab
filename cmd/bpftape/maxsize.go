package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseMaxSize parses --max-size: bytes with an optional K, M, G or T
// suffix (powers of 1024; a trailing "B" or "iB" is allowed); "" is 0.
func parseMaxSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q: want bytes, e.g. 500M or 2G", s)
	}
	return n * mult, nil
}
