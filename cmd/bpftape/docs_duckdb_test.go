//go:build interop && linux && amd64

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/shellwords"
)

// TestDocsDuckDBQueries runs, for each page of README.md and docs/, the
// DuckDB queries it shows (the SQL of each `duckdb -c "..."` line, with
// its $(bpftape ...) replaced by what that command prints, and each
// ```sql block) in DuckDB, in a folder where the page's bpftape examples
// (and a block's "-- bpftape ..." comment lines) ran first on the tour's
// captures, as a reader pasting them would: every query must run and
// return a row.
func TestDocsDuckDBQueries(t *testing.T) {
	node, interop := interopNode(t)
	interop, err := filepath.Abs(interop) // the tests change folder
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for name, text := range userDocs(t) {
		queries, setup := docQueries(text)
		if len(queries) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for file, host := range map[string]string{"vnet.arrow": "vnet-host", "host-a.arrow": "host-a", "host-b.arrow": "host-b"} {
				writeVnet(t, filepath.Join(dir, file), host, 20000)
			}
			t.Chdir(dir)
			for _, cmd := range append(exampleCommands(text), setup...) {
				words, err := shellwords.Split(cmd)
				if err != nil || len(words) < 3 || words[1] == "record" || !slices.ContainsFunc(words, isCapture) || missingInputs(words[1:]) != "" {
					continue
				}
				if st, err := os.Stat(outputOf(words)); err == nil && st.Mode().IsRegular() {
					continue // written by an earlier example
				}
				if _, errOut, code := runCLI(t, words[1:]...); code != exitOK {
					t.Fatalf("%s: %s: exit %d\n%s", name, cmd, code, errOut)
				}
			}
			for _, q := range queries {
				sql := bpftapeSubst.ReplaceAllStringFunc(q, func(sub string) string {
					words, err := shellwords.Split(bpftapeSubst.FindStringSubmatch(sub)[1])
					if err != nil {
						t.Fatalf("%s: %s: %v", name, sub, err)
					}
					out, errOut, code := runCLI(t, words...)
					if code != exitOK {
						t.Fatalf("%s: %s: exit %d\n%s", name, sub, code, errOut)
					}
					return out
				})
				r, err := runDuckDB(node, interop, dir, sql)
				if err != nil {
					t.Errorf("%s: the query %s: %v", name, q, err)
					continue
				}
				if len(r.Rows) == 0 {
					t.Errorf("%s: the query %s returned no row", name, q)
				}
				ran++
			}
		})
	}
	t.Logf("%d documented DuckDB queries ran", ran)
	if ran < 5 {
		t.Errorf("only %d documented DuckDB queries ran: is the extraction broken?", ran)
	}
}

var (
	duckdbLine   = regexp.MustCompile(`^duckdb -c "(.*)"(\s+#.*)?$`)
	bpftapeSubst = regexp.MustCompile(`\$\(bpftape ([^)]*)\)`)
)

// docQueries returns the DuckDB queries of a page, and the bpftape
// commands in "-- bpftape ..." comments of its SQL blocks.
func docQueries(text string) (queries, setup []string) {
	inSQL, inFence := false, false
	var block []string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "```sql"):
			inSQL, block = true, nil
			continue
		case strings.HasPrefix(l, "```") && inSQL:
			inSQL = false
			queries = append(queries, strings.Join(block, "\n"))
			continue
		case strings.HasPrefix(l, "```"):
			inFence = !inFence
			continue
		}
		l = strings.TrimSpace(l)
		switch {
		case inSQL && strings.HasPrefix(l, "-- bpftape "):
			setup = append(setup, strings.TrimPrefix(l, "-- "))
		case inSQL:
			block = append(block, l)
		case inFence:
			if m := duckdbLine.FindStringSubmatch(l); m != nil {
				queries = append(queries, strings.ReplaceAll(m[1], `\"`, `"`))
			}
		}
	}
	return queries, setup
}

// outputOf returns the -o value of a bpftape command, "" if none.
func outputOf(words []string) string {
	for i, w := range words {
		if w == "-o" && i+1 < len(words) {
			return words[i+1]
		}
	}
	return ""
}
