package tracefs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Func is a kernel function that ftrace can trace, hence that kprobes and
// BPF trampolines can attach to: a line of available_filter_functions.
type Func struct {
	Name   string
	Module string // "" for vmlinux
	// Dups is how many further functions have the same name (static
	// functions of different files): a probe by name reaches only one.
	Dups int
}

// Functions returns the traceable kernel functions listed in
// dir/available_filter_functions, sorted by name, each name once.
func Functions(dir string) ([]Func, error) {
	path := filepath.Join(dir, "available_filter_functions")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tracefs: traceable functions: %w", err)
	}
	defer f.Close()
	return parseFunctions(f, path)
}

func parseFunctions(f *os.File, path string) ([]Func, error) {
	byName := map[string]*Func{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		mod := strings.Trim(strings.TrimSpace(rest), "[]")
		if fn, ok := byName[name]; ok {
			fn.Dups++
			continue
		}
		byName[name] = &Func{Name: name, Module: mod}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tracefs: read %s: %w", path, err)
	}
	out := make([]Func, 0, len(byName))
	for _, fn := range byName {
		out = append(out, *fn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
