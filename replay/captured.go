package replay

import (
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/humanfmt"
)

// Captured says what a capture holds about the traced programs, for whoever
// decides whether it may be shared: the columns every event has, how many
// integer fields, and which strings were copied from memory.
func Captured(m *format.Meta) string {
	ints := 0
	var strs, stacks []string
	merged := false
	for _, p := range m.Probes {
		for _, f := range p.Fields {
			switch {
			case len(m.Inputs) > 0 && f.Name == format.HostField && f.Type == format.String:
				merged = true // merge's: the host each event was recorded on
			case f.Type == format.String:
				strs = append(strs, p.Name+"."+f.Name)
			case f.Type.IsStack():
				stacks = append(stacks, p.Name+"."+f.Name)
			default:
				ints++
			}
		}
	}
	fields := humanfmt.Plural(uint64(ints), "integer field", "integer fields")
	s := "time, cpu, pid, tid and command name of every event; " + fields
	if m.Extra[format.ExtraRedacted] != "" {
		// export --redact empties comm and drops string fields.
		s = "time, cpu, pid and tid of every event (command names removed); " + fields
	}
	if merged {
		s += "; the host of every event (merged)"
	}
	if len(stacks) > 0 {
		// The stack table names the mapped files and the functions hit.
		s += "; stacks (with the mapped files and the functions their frames fall in): " + strings.Join(stacks, ", ")
	}
	if len(strs) == 0 {
		return s + "; no strings"
	}
	return s + "; strings copied from memory: " + strings.Join(strs, ", ")
}
