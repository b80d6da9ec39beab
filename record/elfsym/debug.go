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
// what was looked for, the files that were found but belong to another
// build, and those that were not opened at all.
type DebugFileError struct {
	Binary     string
	BuildID    string // the binary's build id, "" if none
	Link       string // its .gnu_debuglink name, "" if none
	Tried      []string
	Mismatches []string // "PATH: has build id X" and the like
	// Refused lists the candidates that are there but were not opened:
	// "PATH: a FIFO, not a regular file", a symbolic link next to the
	// binary (see OpenRegular).
	Refused []string
}

func (e *DebugFileError) Error() string {
	if len(e.Mismatches) > 0 {
		return fmt.Sprintf("elfsym: the debug file found for %s is from a different build: %s", e.Binary, strings.Join(e.Mismatches, "; "))
	}
	if e.BuildID == "" && e.Link == "" {
		return fmt.Sprintf("elfsym: %s has neither a build id nor a .gnu_debuglink to find its debug file by", e.Binary)
	}
	refused := ""
	if len(e.Refused) > 0 {
		refused = "; refused " + strings.Join(e.Refused, "; ")
	}
	return fmt.Sprintf("elfsym: no debug file for %s (tried %s%s)", e.Binary, strings.Join(e.Tried, ", "), refused)
}

// Mismatch reports whether a debug file was found but rejected as another
// build's.
func (e *DebugFileError) Mismatch() bool { return len(e.Mismatches) > 0 }

// MaxDebugFileSize bounds the size of a debug file found by its
// .gnu_debuglink, which is read whole for its CRC32: a larger one (a
// sparse file of a terabyte would take minutes) is rejected as a
// mismatch.
const MaxDebugFileSize = 16 << 30

// FindDebugFile finds the separate debug file of the ELF file at path as gdb
// does (DIR/.build-id/xx/yyyy.debug for each of dirs, then its
// .gnu_debuglink name next to it, in its .debug/ and in DIR/<its directory>),
// accepting only a file of the same build (build id, debuglink CRC32); a
// failure is a *DebugFileError saying what was tried or rejected. Every
// candidate is opened with OpenRegular: the ones next to the binary with
// NoLinks, the ones in dirs with NoMagicLinks (see the package
// documentation).
func FindDebugFile(path string, dirs []string) (string, error) {
	f, debug, err := OpenDebugFile(path, dirs)
	if f != nil {
		f.Close()
	}
	return debug, err
}

// OpenDebugFile is FindDebugFile that also returns the debug file open:
// the very file that was checked to be of the binary's build, for the
// caller to read whatever has become of its path since.
func OpenDebugFile(path string, dirs []string) (*os.File, string, error) {
	f, bf, err := openELF(path, FollowLinks)
	if err != nil {
		return nil, "", err
	}
	defer bf.Close()
	id, err := buildID(f, path)
	if err != nil {
		return nil, "", err
	}
	link, haveLink, err := readDebugLink(f)
	if err != nil {
		return nil, "", fmt.Errorf("elfsym: %s: %w", path, err)
	}
	derr := &DebugFileError{Binary: path, BuildID: id}
	if haveLink {
		derr.Link = link.Name
	}
	self, _ := bf.Stat()
	// open opens a candidate, noting why one that is there was not.
	open := func(cand string, links Links) *os.File {
		derr.Tried = append(derr.Tried, cand)
		cf, err := OpenRegular(cand, links)
		if err != nil {
			if !missing(err) {
				var pe *os.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				derr.Refused = append(derr.Refused, fmt.Sprintf("%s: %v", cand, err))
			}
			return nil
		}
		return cf
	}

	if len(id) > 2 {
		for _, d := range dirs {
			cand := filepath.Join(d, ".build-id", id[:2], id[2:]+".debug")
			cf := open(cand, NoMagicLinks)
			if cf == nil {
				continue
			}
			got, err := fileBuildID(cf, cand)
			switch {
			case err != nil:
				derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s: %v", cand, err))
			case got != id:
				derr.Mismatches = append(derr.Mismatches, fmt.Sprintf("%s has build id %s, %s has %s", cand, orNone(got), path, id))
			default:
				return cf, cand, nil
			}
			cf.Close()
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
		// Next to the binary, whoever may write its directory may have
		// put anything there: no link is followed.
		type candidate struct {
			path  string
			links Links
		}
		cands := []candidate{{filepath.Join(dir, link.Name), NoLinks}, {filepath.Join(dir, ".debug", link.Name), NoLinks}}
		for _, d := range dirs {
			cands = append(cands, candidate{filepath.Join(d, dir, link.Name), NoMagicLinks})
		}
		for _, c := range cands {
			cf := open(c.path, c.links)
			if cf == nil {
				continue
			}
			if why := checkLinked(cf, c.path, path, id, link, self); why != "" {
				if why != "self" {
					derr.Mismatches = append(derr.Mismatches, why)
				}
				cf.Close()
				continue
			}
			return cf, c.path, nil
		}
	}
	return nil, "", derr
}

// checkLinked checks that cf, the candidate cand for the debug file that
// the .gnu_debuglink link of the binary at path (build id id, file self)
// names, is of the binary's build; it says why not: "self" when cand is
// the binary itself.
func checkLinked(cf *os.File, cand, path, id string, link DebugLink, self os.FileInfo) string {
	st, err := cf.Stat()
	if err != nil {
		return fmt.Sprintf("%s: %v", cand, err)
	}
	if self != nil && os.SameFile(st, self) {
		return "self"
	}
	if st.Size() > MaxDebugFileSize {
		return fmt.Sprintf("%s is %d bytes, more than the %d a debug file may have", cand, st.Size(), int64(MaxDebugFileSize))
	}
	if id != "" {
		if got, err := fileBuildID(cf, cand); err == nil && got != "" && got != id {
			return fmt.Sprintf("%s has build id %s, %s has %s", cand, got, path, id)
		}
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(cf, 0, st.Size())); err != nil {
		return fmt.Sprintf("%s: %v", cand, err)
	}
	if crc := h.Sum32(); crc != link.CRC {
		return fmt.Sprintf("%s has CRC32 %08x, the debuglink of %s wants %08x", cand, crc, path, link.CRC)
	}
	return ""
}

// fileBuildID returns the build id of the open ELF file f (found at
// path), "" without one.
func fileBuildID(f *os.File, path string) (string, error) {
	ef, err := newELF(f)
	if err != nil {
		return "", fmt.Errorf("elfsym: %s: %w", path, err)
	}
	return buildID(ef, path)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
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
