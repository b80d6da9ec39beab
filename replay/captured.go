package replay

import (
	"fmt"
	"strings"

	"github.com/bpftape/bpftape/format"
)

// Captured says what a capture holds about the traced programs, for whoever
// decides whether it may be shared: the columns every event has, how many
// integer fields, and which strings were copied from memory.
func Captured(m *format.Meta) string {
	ints := 0
	var strs, stacks []string
	for _, p := range m.Probes {
		for _, f := range p.Fields {
			switch {
			case f.Type == format.String:
				strs = append(strs, p.Name+"."+f.Name)
			case f.Type.IsStack():
				stacks = append(stacks, p.Name+"."+f.Name)
			default:
				ints++
			}
		}
	}
	s := fmt.Sprintf("time, cpu, pid, tid and command name of every event; %d integer fields", ints)
	if m.Extra[format.ExtraRedacted] != "" {
		// export --redact empties comm and drops string fields.
		s = fmt.Sprintf("time, cpu, pid and tid of every event (command names removed); %d integer fields", ints)
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
