package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDebugDirs are the global debug directories searched for separate
// debug files, as gdb's debug-file-directory: Debian's -dbgsym packages
// install into /usr/lib/debug/.build-id.
var DefaultDebugDirs = []string{"/usr/lib/debug"}

// DebugDirsEnv names the environment variable with extra debug directories
// (colon-separated), searched after the ones given on the command line.
const DebugDirsEnv = "BPFTAPE_DEBUG_DIRS"

// DebugDirs returns the debug directories to search, in order: extra (the
// record or list --debug-dir flags), then $BPFTAPE_DEBUG_DIRS, then
// DefaultDebugDirs, without repeats.
func DebugDirs(extra []string) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d = filepath.Clean(d); d != "." && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, d := range extra {
		for _, p := range strings.Split(d, ":") {
			if p != "" {
				add(p)
			}
		}
	}
	for _, p := range strings.Split(os.Getenv(DebugDirsEnv), ":") {
		if p != "" {
			add(p)
		}
	}
	for _, d := range DefaultDebugDirs {
		add(d)
	}
	return dirs
}

// DebugLink is a binary's .gnu_debuglink: the base name of its separate
// debug file and that file's CRC32.
type DebugLink struct {
	Name string
	CRC  uint32
}

// readDebugLink returns f's .gnu_debuglink, or false without one.
func readDebugLink(f *elf.File) (DebugLink, bool, error) {
	sec := f.Section(".gnu_debuglink")
	if sec == nil {
		return DebugLink{}, false, nil
	}
	data, err := sec.Data()
	if err != nil {
		return DebugLink{}, false, fmt.Errorf("reading .gnu_debuglink: %w", err)
	}
	nul := bytes.IndexByte(data, 0)
	if nul <= 0 {
		return DebugLink{}, false, errors.New(".gnu_debuglink has no file name")
	}
	crcAt := (nul + 4) &^ 3
	if crcAt+4 > len(data) {
		return DebugLink{}, false, errors.New(".gnu_debuglink is truncated")
	}
	name := string(data[:nul])
	if strings.ContainsRune(name, '/') {
		return DebugLink{}, false, fmt.Errorf(".gnu_debuglink names %q, not a base name", name)
	}
	return DebugLink{Name: name, CRC: f.ByteOrder.Uint32(data[crcAt:])}, true, nil
}

// DebugFileError says why no separate debug file was found for Binary:
// what was looked for, and the files that were found but belong to
// another build.
type DebugFileError struct {
	Binary     string
	BuildID    string // the binary's build id, "" if none
	Link       string // its .gnu_debuglink name, "" if none
	Tried      []string
	Mismatches []string // "PATH: has build id X" and the like
}

func (e *DebugFileError) Error() string {
	if len(e.Mismatches) > 0 {
		return fmt.Sprintf("elfsym: the debug file found for %s is from a different build: %s", e.Binary, strings.Join(e.Mismatches, "; "))
	}
	if e.BuildID == "" && e.Link == "" {
		return fmt.Sprintf("elfsym: %s has neither a build id nor a .gnu_debuglink to find its debug file by", e.Binary)
	}
	return fmt.Sprintf("elfsym: no debug file for %s (tried %s)", e.Binary, strings.Join(e.Tried, ", "))
}

// Mismatch reports whether a debug file was found but rejected as another
// build's.
func (e *DebugFileError) Mismatch() bool { return len(e.Mismatches) > 0 }

// FindDebugFile finds the separate debug file of the ELF file at path as gdb
// does (DIR/.build-id/xx/yyyy.debug for each of dirs, then its
// .gnu_debuglink name next to it, in its .debug/ and in DIR/<its directory>),
// accepting only a file of the same build (build id, debuglink CRC32); a
// failure is a *DebugFileError saying what was tried or rejected.
func FindDebugFile(path string, dirs []string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("elfsym: %w", err)
	}
	defer f.Close()
	id, err := buildID(f, path)
	if err != nil {
		return "", err
	}
	link, haveLink, err := readDebugLink(f)
	if err != nil {
		return "", fmt.Errorf("elfsym: %s: %w", path, err)
	}
	derr := &DebugFileError{Binary: path, BuildID: id}
	if haveLink {
		derr.Link = link.Name
	}
	self, _ := os.Stat(path)

	if len(id) > 2 {
		for _, d := range dirs {
			cand := filepath.Join(d, ".build-id", id[:2], id[2:]+".debug")
			derr.Tried = append(derr.Tried, cand)
			if _, err := os.Stat(cand); err != nil {
				continue
			}
			got, err := BuildID(cand)
			switch {
			case err != nil:
				derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s: %v", cand, err))
			case got != id:
				derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s has build id %s, %s has %s", cand, orNone(got), path, id))
			default:
				return cand, nil
			}
		}
	}
	if haveLink {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			real = path
		}
		if abs, err := filepath.Abs(real); err == nil {
			real = abs
		}
		dir := filepath.Dir(real)
		cands := []string{filepath.Join(dir, link.Name), filepath.Join(dir, ".debug", link.Name)}
		for _, d := range dirs {
			cands = append(cands, filepath.Join(d, dir, link.Name))
		}
		for _, cand := range cands {
			derr.Tried = append(derr.Tried, cand)
			st, err := os.Stat(cand)
			if err != nil || st.IsDir() || self != nil && os.SameFile(st, self) {
				continue
			}
			if id != "" {
				if got, err := BuildID(cand); err == nil && got != "" && got != id {
					derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s has build id %s, %s has %s", cand, got, path, id))
					continue
				}
			}
			crc, err := fileCRC(cand)
			if err != nil {
				derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s: %v", cand, err))
				continue
			}
			if crc != link.CRC {
				derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s has CRC32 %08x, the debuglink of %s wants %08x", cand, crc, path, link.CRC))
				continue
			}
			return cand, nil
		}
	}
	return "", derr
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// fileCRC is the CRC32 (IEEE, as gnu_debuglink uses) of the file at path.
func fileCRC(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, f); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// buildID returns the hex build id of the open ELF file f, "" without one.
func buildID(f *elf.File, path string) (string, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return "", fmt.Errorf("elfsym: %s: section %s: %w", path, s.Name, err)
		}
		if id, ok := findNote(data, f.ByteOrder, "GNU", ntGNUBuildID); ok {
			return hex.EncodeToString(id), nil
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		// Filesz comes from the file: read what is there, not what it claims.
		data, err := io.ReadAll(p.Open())
		if err != nil || uint64(len(data)) != p.Filesz {
			return "", fmt.Errorf("elfsym: %s: note segment of %d bytes at %#x: %d bytes read (%v)", path, p.Filesz, p.Off, len(data), err)
		}
		if id, ok := findNote(data, f.ByteOrder, "GNU", ntGNUBuildID); ok {
			return hex.EncodeToString(id), nil
		}
	}
	return "", nil
}
