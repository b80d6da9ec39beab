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
	var strs []string
	for _, p := range m.Probes {
		for _, f := range p.Fields {
			if f.Type == format.String {
				strs = append(strs, p.Name+"."+f.Name)
			} else {
				ints++
			}
		}
	}
	s := fmt.Sprintf("time, cpu, pid, tid and command name of every event; %d integer fields", ints)
	if m.Extra[format.ExtraRedacted] != "" {
		// export --redact empties comm and drops string fields.
		s = fmt.Sprintf("time, cpu, pid and tid of every event (command names removed); %d integer fields", ints)
	}
	if len(strs) == 0 {
		return s + "; no strings"
	}
	return s + "; strings copied from memory: " + strings.Join(strs, ", ")
}
