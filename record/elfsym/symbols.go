package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

const (
	ntGNUBuildID = 3               // note type of a GNU build ID (NT_GNU_BUILD_ID)
	sttGNUIFunc  = elf.SymType(10) // STT_GNU_IFUNC, which debug/elf does not name
)

// BuildID returns the hex GNU build ID of the ELF file at path, from its
// note sections (or PT_NOTE segments when it has no section headers); "" with
// a nil error when it has none.
func BuildID(path string) (string, error) {
	f, file, err := openELF(path, FollowLinks)
	if err != nil {
		return "", err
	}
	defer file.Close()
	return buildID(f, path)
}

// findNote returns the descriptor of the first note named name with type
// typ in data (a sequence of ELF notes, 4-byte aligned).
func findNote(data []byte, bo binary.ByteOrder, name string, typ uint32) ([]byte, bool) {
	for len(data) >= 12 {
		namesz := uint64(bo.Uint32(data[0:]))
		descsz := uint64(bo.Uint32(data[4:]))
		ntype := bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if nameEnd > uint64(len(data)) || descEnd > uint64(len(data)) {
			return nil, false
		}
		n := strings.TrimRight(string(data[:namesz]), "\x00")
		if n == name && ntype == typ {
			return data[nameEnd : nameEnd+descsz], true
		}
		data = data[descEnd:]
	}
	return nil, false
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// isFunc reports whether s is a function defined in its file: STT_FUNC or
// STT_GNU_IFUNC (glibc's memcpy, strlen: the resolver), not undefined.
func isFunc(s elf.Symbol) bool {
	t := elf.ST_TYPE(s.Info)
	return (t == elf.STT_FUNC || t == sttGNUIFunc) &&
		s.Section != elf.SHN_UNDEF && s.Value != 0
}

// baseName strips a symbol version ("malloc@@GLIBC_2.2.5" → "malloc").
func baseName(name string) string {
	if i := strings.IndexByte(name, '@'); i > 0 {
		return name[:i]
	}
	return name
}

// allSymbols returns .symtab then .dynsym symbols; a file without either is
// not an error.
func allSymbols(f *elf.File) ([]elf.Symbol, error) {
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, err
	}
	dyn, err := f.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, err
	}
	return append(syms, dyn...), nil
}

// FuncSymbols returns the sorted, deduplicated names of the functions
// defined in the ELF file at path (.symtab and .dynsym, versions stripped),
// e.g. for suggestions.
func FuncSymbols(path string) ([]string, error) {
	f, file, err := openELF(path, FollowLinks)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	syms, err := allSymbols(f)
	if err != nil {
		return nil, fmt.Errorf("elfsym: %s: %w", path, err)
	}
	seen := make(map[string]bool)
	var names []string
	for _, s := range syms {
		if !isFunc(s) {
			continue
		}
		n := baseName(s.Name)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// SymbolOffset returns the file offset a uprobe on function sym of the ELF
// file at path attaches at, as cilium/ebpf's link.Executable computes it, for
// PIE and non-PIE executables and shared libraries. sym may name a version
// ("memcpy@GLIBC_2.2.5"), else the default version wins; a missing or
// ambiguous name is an error naming close ones. See Locate for the other
// target forms and the debug-file search (here in DebugDirs(nil)).
func SymbolOffset(path, sym string) (uint64, error) {
	loc, err := Locate(path, sym, DebugDirs(nil))
	if err != nil {
		return 0, err
	}
	return loc.Offset, nil
}

// splitVersion splits "name@VERSION" (hidden, an older version) or
// "name@@VERSION" (the default version).
func splitVersion(name string) (base, version string, hidden bool) {
	i := strings.IndexByte(name, '@')
	if i <= 0 {
		return name, "", false
	}
	if strings.HasPrefix(name[i:], "@@") {
		return name[:i], name[i+2:], false
	}
	return name[:i], name[i+1:], true
}

// FileOffset translates the virtual address addr of code in f to its file
// offset, through the executable PT_LOAD segment that contains it.
func FileOffset(f *elf.File, addr uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		if p.Vaddr <= addr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("address %#x is in no executable PT_LOAD segment", addr)
}
