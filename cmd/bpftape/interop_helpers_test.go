package main

// The interop readers' helpers that untagged files use: the tests that
// run the readers are in the files built with -tags interop
// (interop_*_test.go, *_polars_test.go, *_duckdb_test.go), and the
// reliability tests cross-check their files with polars only then
// (interopTests).

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// skipShortWithoutReaders skips the test under -short (make unit) unless
// node and the interop readers' npm modules are in place already, where
// install.sh would otherwise run npm ci.
func skipShortWithoutReaders(t *testing.T, interop string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("-short: node is not installed: cannot run the nodejs-polars and DuckDB readers")
	}
	for _, m := range []string{"nodejs-polars", "@duckdb/node-api"} {
		if _, err := os.Stat(filepath.Join(interop, "node_modules", m)); err != nil {
			t.Skipf("-short: %s is not installed (sh testdata/interop/install.sh)", m)
		}
	}
}

// polarsResult is what testdata/interop/read.js prints.
type polarsResult struct {
	Rows     uint64            `json:"rows"`
	PerProbe map[string]uint64 `json:"per_probe"`
	Lost     uint64            `json:"lost"`
}

var interopOnce sync.Once

// readPolars reads a capture with nodejs-polars, an Arrow reader that
// shares no code with bpftape.
func readPolars(t *testing.T, path string) polarsResult {
	t.Helper()
	interop := filepath.Join("..", "..", "testdata", "interop")
	skipShortWithoutReaders(t, interop)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (make deps): the independent reader is nodejs-polars")
	}
	var installErr error
	interopOnce.Do(func() {
		if out, err := exec.Command("sh", filepath.Join(interop, "install.sh")).CombinedOutput(); err != nil {
			installErr = errors.New(err.Error() + "\n" + string(out))
		}
	})
	if installErr != nil {
		t.Fatalf("install nodejs-polars: %v", installErr)
	}
	out, err := exec.Command(node, filepath.Join(interop, "read.js"), path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("read.js %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatalf("read.js %s: %v", path, err)
	}
	var res polarsResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("read.js output %q: %v", out, err)
	}
	return res
}
