package export

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
)

// Redaction (Options.Redact) makes a capture fit to share: it keeps what
// the analyses need — times, CPUs, pids and tids, probe names and kinds,
// integer fields, loss records, the kernel release, the tool version, the
// start time, build ids and the base names of the probed binaries — and
// drops every string the traced processes or the recording host gave it:
//
//   - the comm column: emptied in an Arrow capture (bpftape's schema has
//     it), left out of CSV, JSON lines and Parquet;
//   - every string field (str(argN), string tracepoint fields, a merged
//     capture's host field): its column is left out and, in the metadata,
//     the field is removed from its probe;
//   - in the metadata (and in every merged input's): the host name, the
//     recorder's command line, the traced command (Extra "command") and
//     process name (Extra "comm"), debug-file paths, the input file names
//     of a merge, and every other Extra fact not known to be a number or a
//     tunable (RedactKeepExtra); probed binaries and libraries keep only
//     their base names, in the probe's target and in its spec as typed;
//   - in the stack table (RedactStacks): the paths of mapped files keep
//     their base names; build ids, mappings and the functions hit stay,
//     which the stacks need.
//
// The metadata then says so: Extra "redacted" lists what was removed, and
// "redacted.string_fields" the string fields dropped (probe.field, or
// "none"). CSV and JSON lines carry no metadata.

// RedactKeepExtra are the Extra keys a redacted capture keeps: numbers and
// tunables that identify neither the host nor a command.
var RedactKeepExtra = map[string]bool{
	"pid":                 true,
	"ring_size":           true,
	"wakeup_bytes":        true,
	"merged":              true,
	"merge.time_shift_ns": true,
}

// Extra keys a redaction adds.
const (
	RedactedKey       = format.ExtraRedacted
	RedactedFieldsKey = "redacted.string_fields"
)

// RedactedWhat is the value of Extra "redacted".
const RedactedWhat = "comm (command names) and every string field dropped; host name, command lines, " +
	"traced command and process names, file paths (binaries keep their base names) and other host facts removed"

// RedactMeta returns a deep copy of m with what Options.Redact removes
// removed, and Extra saying so; m is left alone.
func RedactMeta(m *format.Meta) (*format.Meta, error) {
	r, err := cloneMeta(m)
	if err != nil {
		return nil, err
	}
	dropped := redactOne(r)
	for i := range r.Inputs {
		redactOne(&r.Inputs[i])
	}
	if r.Extra == nil {
		r.Extra = map[string]string{}
	}
	r.Extra[RedactedKey] = RedactedWhat
	r.Extra[RedactedFieldsKey] = "none"
	if len(dropped) > 0 {
		r.Extra[RedactedFieldsKey] = strings.Join(dropped, ",")
	}
	return r, nil
}

// cloneMeta returns a deep copy of m.
func cloneMeta(m *format.Meta) (*format.Meta, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	c := new(format.Meta)
	if err := json.Unmarshal(b, c); err != nil {
		return nil, err
	}
	return c, nil
}

// redactOne redacts one capture's metadata in place and returns the string
// fields it dropped, as probe.field.
func redactOne(m *format.Meta) (dropped []string) {
	m.Host = ""
	m.CommandLine = nil
	var removed []string
	for k := range m.Extra {
		if !RedactKeepExtra[k] {
			removed = append(removed, k)
			delete(m.Extra, k)
		}
	}
	sort.Strings(removed)
	for pi := range m.Probes {
		p := &m.Probes[pi]
		kept := p.Fields[:0]
		for _, f := range p.Fields {
			if f.Type == format.String {
				dropped = append(dropped, p.Name+"."+f.Name)
				continue
			}
			kept = append(kept, f)
		}
		p.Fields = kept
		// A filter's strings are comms: names of the host's programs.
		p.Spec = redactQuoted(redactSpec(p.Spec))
		p.Filter = redactQuoted(p.Filter)
		if p.Target != "" {
			p.Target = path.Base(p.Target)
		}
	}
	return dropped
}

// redactSpec returns a probe spec as typed with its binary (a path, a
// program or a library name) cut to its base name; a spec that does not
// parse is dropped (it might hold anything).
func redactSpec(spec string) string {
	s, err := probespec.Parse(spec)
	if err != nil {
		return ""
	}
	if s.Binary == "" || !strings.Contains(s.Binary, "/") {
		return spec
	}
	base := path.Base(s.Binary)
	if i := strings.Index(spec, ":"+s.Binary+":"); i >= 0 {
		return spec[:i+1] + base + spec[i+1+len(s.Binary):]
	}
	return ""
}

// redactQuoted replaces the content of every "string" in s (a filter's
// comms) with "?".
func redactQuoted(s string) string {
	if !strings.Contains(s, `"`) {
		return s
	}
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\\':
			i++ // the escaped byte goes too
		case c == '"':
			if in {
				b.WriteString(`?"`)
			} else {
				b.WriteByte('"')
			}
			in = !in
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// exportMeta is the metadata an export writes: c's, redacted if asked.
func exportMeta(m *format.Meta, o *Options) (*format.Meta, error) {
	if !o.Redact {
		return m, nil
	}
	r, err := RedactMeta(m)
	if err != nil {
		return nil, fmt.Errorf("redact metadata: %w", err)
	}
	return r, nil
}

// RedactStacks returns a copy of t whose objects keep only the base names
// of their paths ("[kernel]" and modules as they are), and whose notes on
// objects without symbols, which name debug-file paths, are cut to say
// only that.
func RedactStacks(t *format.StackTable) *format.StackTable {
	if t == nil {
		return nil
	}
	r := *t
	r.Objects = make([]format.Object, len(t.Objects))
	for i, o := range t.Objects {
		if !o.Kernel && !strings.HasPrefix(o.Path, "[") {
			o.Path = path.Base(o.Path)
		}
		if o.NoSymbols != "" {
			o.NoSymbols = "no symbols (details redacted)"
		}
		r.Objects[i] = o
	}
	return &r
}
