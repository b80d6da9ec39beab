package tracefs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FieldKind says how the recorder can read a tracepoint field.
type FieldKind int

const (
	// Int is an integer (or enum, bool, pointer, or other scalar) of Size
	// 1, 2, 4 or 8 bytes.
	Int FieldKind = iota
	// CharArray is a fixed char x[N] (N == Size), e.g. a task comm.
	CharArray
	// DataLoc is a __data_loc char[] (or __data_loc string): a u32 at
	// Offset whose low 16 bits are the string's offset in the record and
	// high 16 bits its length.
	DataLoc
	// Other is anything else (structs, non-char arrays, __rel_loc, odd
	// sizes): the recorder skips it with a note.
	Other
)

// String names the kind for messages.
func (k FieldKind) String() string {
	switch k {
	case Int:
		return "int"
	case CharArray:
		return "char-array"
	case DataLoc:
		return "data-loc"
	case Other:
		return "other"
	}
	return fmt.Sprintf("FieldKind(%d)", int(k))
}

// Field is one non-common field of a tracepoint record, as its format file
// describes it.
type Field struct {
	Name   string
	CType  string // the declared type without the name: "const char *", "char[16]", "__data_loc char[]"
	Offset int    // byte offset in the raw record, common fields included
	Size   int    // byte size in the record (for DataLoc, 4: the locator)
	Signed bool   // from "signed:"; always false for pointers
	Kind   FieldKind
}

// Format is a parsed events/CATEGORY/EVENT/format file.
type Format struct {
	Category, Event string
	ID              uint32
	Fields          []Field // non-common fields, in record order
}

// End is where the kernel ends the record for a BPF program's loads from
// it (trace_event_get_offsets, which perf_event_set_bpf_prog checks): the
// last field's offset + size, 8 (the common fields) for an event without
// fields of its own.
func (f *Format) End() int {
	if len(f.Fields) == 0 {
		return 8
	}
	last := f.Fields[len(f.Fields)-1]
	return last.Offset + last.Size
}

// Field returns the field called name, or nil.
func (f *Format) Field(name string) *Field {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// FieldNames lists the fields' names in order, e.g. for suggestions.
func (f *Format) FieldNames() []string {
	names := make([]string, len(f.Fields))
	for i, fl := range f.Fields {
		names[i] = fl.Name
	}
	return names
}

// ParseFormat parses the text of a tracepoint format file, dropping the
// common_ fields and the print fmt and leaving Category empty. It does not
// rely on line breaks, so a format pasted onto one line parses too.
func ParseFormat(text string) (*Format, error) {
	// The print fmt is free text that may contain anything: cut it off.
	if i := strings.Index(text, "print fmt:"); i >= 0 {
		text = text[:i]
	}
	var f Format
	name, ok := keyword(text, "name:")
	if !ok {
		return nil, errors.New("tracefs: format has no \"name:\"")
	}
	f.Event = name
	idText, ok := keyword(text, "ID:")
	if !ok {
		return nil, fmt.Errorf("tracefs: format of %s has no \"ID:\"", name)
	}
	id, err := strconv.ParseUint(idText, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("tracefs: format of %s: bad ID %q", name, idText)
	}
	f.ID = uint32(id)

	rest := text
	for {
		i := strings.Index(rest, "field:")
		if i < 0 {
			break
		}
		rest = rest[i+len("field:"):]
		// A field ends where the next one starts.
		item := rest
		if j := strings.Index(rest, "field:"); j >= 0 {
			item = rest[:j]
		}
		fl, err := parseField(item)
		if err != nil {
			return nil, fmt.Errorf("tracefs: format of %s: %w", name, err)
		}
		if !strings.HasPrefix(fl.Name, "common_") {
			f.Fields = append(f.Fields, fl)
		}
	}
	return &f, nil
}

// keyword returns the whitespace-delimited word after key, where key starts
// the text or follows whitespace.
func keyword(text, key string) (string, bool) {
	for off := 0; ; {
		i := strings.Index(text[off:], key)
		if i < 0 {
			return "", false
		}
		i += off
		off = i + len(key)
		if i > 0 && !isSpace(text[i-1]) {
			continue
		}
		fields := strings.Fields(text[off:])
		if len(fields) == 0 {
			return "", false
		}
		return fields[0], true
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseField parses "TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;" (signed is
// missing on old kernels).
func parseField(item string) (Field, error) {
	parts := strings.Split(item, ";")
	decl := strings.TrimSpace(parts[0])
	var fl Field
	var haveOff, haveSize bool
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		key, val, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		switch key {
		case "offset", "size", "signed":
			if err != nil || n < 0 {
				return fl, fmt.Errorf("field %q: bad %s %q", decl, key, val)
			}
		}
		switch key {
		case "offset":
			fl.Offset, haveOff = n, true
		case "size":
			fl.Size, haveSize = n, true
		case "signed":
			fl.Signed = n != 0
		}
	}
	if !haveOff || !haveSize {
		return fl, fmt.Errorf("field %q: missing offset or size", decl)
	}
	name, ctype, arrayLen, err := splitDecl(decl)
	if err != nil {
		return fl, err
	}
	fl.Name, fl.CType = name, ctype
	fl.Kind = classify(ctype, arrayLen, fl.Size)
	if strings.Contains(ctype, "*") && fl.Kind == Int {
		fl.Signed = false
	}
	return fl, nil
}

// splitDecl splits a C declaration "const char * filename" or "char
// comm[16]" into its name and type ("const char *", "char[16]"). arrayLen is
// the text between the brackets, "" for none or "[]".
func splitDecl(decl string) (name, ctype, arrayLen string, err error) {
	d := decl
	suffix := ""
	if strings.HasSuffix(d, "]") {
		i := strings.LastIndexByte(d, '[')
		if i < 0 {
			return "", "", "", fmt.Errorf("field %q: unbalanced ]", decl)
		}
		suffix = d[i:]
		arrayLen = strings.TrimSpace(d[i+1 : len(d)-1])
		d = strings.TrimRight(d[:i], " \t")
	}
	end := len(d)
	start := end
	for start > 0 && isIdent(d[start-1]) {
		start--
	}
	if start == end {
		return "", "", "", fmt.Errorf("field %q: no name", decl)
	}
	name = d[start:end]
	base := strings.TrimSpace(d[:start])
	if base == "" {
		return "", "", "", fmt.Errorf("field %q: no type", decl)
	}
	// Keep the declaration's own spacing, but glue array brackets to the
	// type: "char[16]".
	return name, base + suffix, arrayLen, nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// classify assigns a FieldKind from a field's type and size.
func classify(ctype, arrayLen string, size int) FieldKind {
	if rest, ok := strings.CutPrefix(ctype, "__data_loc"); ok {
		base := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "[]"))
		base = strings.TrimSpace(strings.TrimPrefix(base, "const "))
		if (base == "char" || base == "string") && size == 4 {
			return DataLoc
		}
		return Other
	}
	if strings.HasPrefix(ctype, "__rel_loc") {
		return Other
	}
	if i := strings.IndexByte(ctype, '['); i >= 0 {
		base := strings.TrimSpace(ctype[:i])
		base = strings.TrimSpace(strings.TrimPrefix(base, "const "))
		if base != "char" || size == 0 {
			return Other
		}
		// A numeric length must agree with the size; symbolic lengths
		// (TASK_COMM_LEN on old kernels) take the size.
		if n, err := strconv.Atoi(arrayLen); err == nil && n != size {
			return Other
		}
		return CharArray
	}
	if strings.Contains(ctype, "*") {
		if size == 4 || size == 8 {
			return Int
		}
		return Other
	}
	for _, kw := range []string{"struct ", "union "} {
		if strings.HasPrefix(ctype, kw) || strings.Contains(ctype, " "+kw) {
			return Other
		}
	}
	switch size {
	case 1, 2, 4, 8:
		return Int
	}
	return Other
}
