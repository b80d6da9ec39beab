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
		{"stacks", chain, "--comm", "chain", "--from", "1ms"},
		{"stacks", chain, "--text", "--offsets", "--to", "1h"},
		{"flamegraph", chain, "--comm", "chain", "-o", "-"},
		{"flamegraph", chain, "-o", "-"},
		{"report", chain, "-o", "-"},
		{"events", chain},
		{"export", "-f", "parquet", "-o", "-", chain},
		{"info", chain},
	})
}
