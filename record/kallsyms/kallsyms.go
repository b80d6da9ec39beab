// Package kallsyms reads the kernel's symbol table, /proc/kallsyms: one
// line a symbol, with its address, its type and its name, and the module
// it belongs to for the symbols of loaded modules.
package kallsyms

import (
	"bufio"
	"os"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Path is where the kernel lists its symbols, those of its loaded modules
// included.
const Path = "/proc/kallsyms"

// A Symbol is a line of kallsyms: "ffffffff816d5b70 T vfs_read", or
// "ffffffffc0a01000 t ext4_fill_super\t[ext4]" for a module's. Read reuses
// the Symbol it passes and its slices point into Read's buffer: both are
// valid only during the call that gets them.
type Symbol struct {
	// Addr is the symbol's address, 0 when kallsyms hides addresses
	// (kernel.kptr_restrict, or a reader without privileges) or when the
	// first field is not a hexadecimal number.
	Addr uint64
	// Type is nm's letter for the symbol: 't' or 'T' for a function, 'w'
	// or 'W' for a weak one, lower case for a local symbol.
	Type byte
	Name []byte
	// Module is the fourth field: "[ext4]" for a symbol of a loaded
	// module, nil for one of the kernel's own.
	Module []byte
}

// IsFunc reports whether a symbol of type typ is a function: t, T, w or
// W.
func IsFunc(typ byte) bool { return typ == 't' || typ == 'T' || typ == 'w' || typ == 'W' }

// Read reads the kallsyms file at path (Path, or a copy) and calls fn with
// each line that has at least three fields and a type of one character,
// in the file's order. It returns how many lines it read, those it skipped
// included, and the error of opening or reading the file (a line longer
// than 1 MiB is one). Fields are separated as bytes.Fields separates them.
//
// Read allocates nothing per line: a caller that keeps a name copies it.
// A distribution kernel lists about 120,000 symbols.
func Read(path string, fn func(*Symbol)) (lines int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var fields [4][]byte
	var s Symbol
	for sc.Scan() {
		lines++
		// ADDRESS TYPE NAME [MODULE]
		n := splitFields(sc.Bytes(), &fields)
		if n < 3 || len(fields[1]) != 1 {
			continue
		}
		addr, perr := strconv.ParseUint(string(fields[0]), 16, 64)
		if perr != nil {
			addr = 0
		}
		s = Symbol{Addr: addr, Type: fields[1][0], Name: fields[2]}
		if n > 3 {
			s.Module = fields[3]
		}
		fn(&s)
	}
	return lines, sc.Err()
}

// splitFields puts the first fields of line, up to len(fields), in fields
// and returns how many it put: the fields that bytes.Fields returns, without
// allocating a slice for them.
func splitFields(line []byte, fields *[4][]byte) int {
	n, i := 0, 0
	for n < len(fields) {
		for i < len(line) {
			w, sp := space(line[i:])
			if !sp {
				break
			}
			i += w
		}
		if i == len(line) {
			break
		}
		start := i
		for i < len(line) {
			w, sp := space(line[i:])
			if sp {
				break
			}
			i += w
		}
		fields[n] = line[start:i]
		n++
	}
	return n
}

// space returns the width of the character that b starts with and whether
// it is white space (unicode.IsSpace; an invalid byte is not).
func space(b []byte) (width int, isSpace bool) {
	if c := b[0]; c < utf8.RuneSelf {
		return 1, c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
	}
	r, w := utf8.DecodeRune(b)
	return w, unicode.IsSpace(r)
}
