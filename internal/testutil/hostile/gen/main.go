// Command gen writes the forged captures of package hostile into a folder:
// go run ./internal/testutil/hostile/gen DIR.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, c := range hostile.Captures() {
		if err := c.Write(filepath.Join(os.Args[1], c.Name+".arrow")); err != nil {
			fmt.Fprintf(os.Stderr, "gen: %s: %v\n", c.Name, err)
			os.Exit(1)
		}
	}
}
