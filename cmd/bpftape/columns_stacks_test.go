//go:build linux && amd64

package main

import "testing"

// TestColumnSelectionStacks is TestColumnSelection on a recorded capture
// with user stacks.
func TestColumnSelectionStacks(t *testing.T) {
	dir := t.TempDir()
	_, chain := recordChain(t, dir, 3000)
	checkEveryColumn(t, dir, [][]string{
		{"stacks", chain},
		{"stacks", chain, "--by", "tid"},
		{"stacks", chain, "--text", "--comm", "chain"},
		{"flamegraph", chain, "-o", "-"},
		{"report", chain, "-o", "-"},
		{"events", chain},
		{"info", chain},
	})
}
