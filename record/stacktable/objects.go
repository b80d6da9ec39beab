package stacktable

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/record/elfsym"
)

// maxVDSO bounds the size of a [vdso] image read from a process's memory.
const maxVDSO = 1 << 20

// object is a mapped file, the vdso, the kernel or a kernel module.
type object struct {
	id          uint32 // 0 until it is in the table; then 1, 2...
	path        string
	buildID     string
	kernel      bool
	buildIDFrom string // a kernel object's notes file, read when it is used

	segs []segment // PT_LOAD segments, for the mappings' Bias

	// file is the object, kept open (through /proc/PID/map_files when it
	// could) until its symbols are read, so that they are the mapped
	// file's even once the process has exited and the file is deleted or
	// replaced.
	file      *os.File
	reopen    []string // else the paths to open it by again...
	key       fileKey  // ...if it is still this file
	loaded    bool     // tab and noSymbols are known
	tab       symtab
	noSymbols string
}

// segment is a PT_LOAD program header.
type segment struct {
	off, vaddr, filesz, memsz uint64
	exec                      bool
}

// fileKey tells files apart: a file rewritten in place or replaced by
// another of the same inode number has another size or mtime.
type fileKey struct {
	dev, ino  uint64
	size      int64
	mtimeSec  int64
	mtimeNsec int64
}

// identify returns the object of the executable mapping l of pid, nil
// for anonymous memory (JIT code) that no object covers. A file is opened
// through /proc/PID/map_files, which reaches the mapped file even when
// its path is deleted, replaced or in another mount namespace; failing
// that (no CAP_SYS_ADMIN), through /proc/PID/root, then by its path.
func (c *Collector) identify(pid uint32, l mapsLine) *object {
	if l.path == "[vdso]" {
		return c.vdsoObject(pid, l)
	}
	if isAnonymous(l.path) {
		return nil
	}
	dir := filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10))
	cands := []string{filepath.Join(dir, "map_files", strconv.FormatUint(l.start, 16)+"-"+strconv.FormatUint(l.end, 16))}
	if p := strings.TrimSuffix(l.path, " (deleted)"); strings.HasPrefix(p, "/") {
		cands = append(cands, filepath.Join(dir, "root", p), p)
	}
	var f *os.File
	var st unix.Stat_t
	var firstErr error
	for _, p := range cands {
		var err error
		if f, err = openRegular(p, &st); err == nil {
			break
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if f == nil {
		if o := c.byPath[l.path]; o != nil {
			return o
		}
		o := &object{path: l.path, loaded: true, noSymbols: fmt.Sprintf("it could not be opened: %v", firstErr)}
		c.byPath[l.path] = o
		return o
	}
	key := fileKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtimeSec: st.Mtim.Sec, mtimeNsec: st.Mtim.Nsec}
	if o := c.byFile[key]; o != nil {
		f.Close()
		return o
	}
	o := &object{path: l.path}
	segs, err := elfSegments(f)
	if err != nil {
		f.Close()
		o.loaded, o.noSymbols = true, fmt.Sprintf("not a readable ELF file: %v", err)
		c.byFile[key] = o
		return o
	}
	o.segs = segs
	if id := fileBuildID(fdPath(f)); id != "" {
		if same := c.byBuildID[id]; same != nil {
			f.Close()
			c.byFile[key] = same
			return same
		}
		o.buildID = id
		c.byBuildID[id] = o
	}
	c.byFile[key] = o
	if c.openFiles < maxOpenFiles {
		o.file = f
		c.openFiles++
	} else {
		// Too many open: opened again, and checked to be the same file,
		// when a frame needs its symbols.
		f.Close()
		o.reopen, o.key = cands, key
	}
	return o
}

// reopenFile opens o's file again by the paths it was found by, if it is
// still the same file.
func (o *object) reopenFile() (*os.File, error) {
	err := errors.New("no path to open it by")
	for _, p := range o.reopen {
		var st unix.Stat_t
		f, ferr := openRegular(p, &st)
		if ferr != nil {
			err = ferr
			continue
		}
		if (fileKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtimeSec: st.Mtim.Sec, mtimeNsec: st.Mtim.Nsec}) == o.key {
			return f, nil
		}
		f.Close()
		err = fmt.Errorf("%s is another file now", p)
	}
	return nil, err
}

// fileBuildID is elfsym.BuildID of the file at path, "" if it has none or
// cannot be read.
func fileBuildID(path string) (id string) {
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	id, err := elfsym.BuildID(path)
	if err != nil {
		return ""
	}
	return id
}

// openRegular opens the regular file at path for reading, and fstats it
// into st: never blocking on a FIFO or a device that a hostile path names.
func openRegular(path string, st *unix.Stat_t) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.Fstat(fd, st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// fdPath is a path that opens f again, even deleted: for the functions of
// elfsym, which take paths.
func fdPath(f *os.File) string {
	return "/proc/self/fd/" + strconv.FormatUint(uint64(f.Fd()), 10)
}

// elfSegments returns the PT_LOAD segments of the ELF file r.
func elfSegments(r io.ReaderAt) (segs []segment, err error) {
	defer guard(&err)
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			segs = append(segs, segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz, memsz: max(p.Memsz, p.Filesz), exec: p.Flags&elf.PF_X != 0})
		}
	}
	return segs, nil
}

// guard turns a panic of debug/elf on a hostile file into an error: the
// recorder must survive whatever a traced process maps.
func guard(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("malformed ELF file (%v)", r)
	}
}

// loadSymbols reads o's function symbols, once, and closes its file.
func (c *Collector) loadSymbols(o *object) {
	if o.loaded {
		return
	}
	o.loaded = true
	f := o.file
	o.file = nil
	if f != nil {
		c.openFiles--
	} else {
		var err error
		if f, err = o.reopenFile(); err != nil {
			o.noSymbols = fmt.Sprintf("it could not be opened again for its symbols: %v", err)
			return
		}
	}
	defer f.Close()
	o.tab, o.noSymbols = c.elfSymbols(f, fdPath(f), o.segs)
}

// elfSymbols returns the function symbols of the ELF file r: its .symtab
// and .dynsym, and when it has no .symtab (stripped) its separate debug
// file's, found from path (elfsym.FindDebugFile in the debug dirs); with
// none at all, it says why instead.
func (c *Collector) elfSymbols(r io.ReaderAt, path string, segs []segment) (tab symtab, why string) {
	var cands []cand
	hasSymtab := false
	err := func() (err error) {
		defer guard(&err)
		ef, err := elf.NewFile(r)
		if err != nil {
			return err
		}
		own, err := ef.Symbols()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return fmt.Errorf(".symtab: %w", err)
		}
		hasSymtab = len(own) > 0
		cands = appendFuncs(cands, own)
		dyn, err := ef.DynamicSymbols()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) && len(cands) == 0 {
			return fmt.Errorf(".dynsym: %w", err)
		}
		cands = appendFuncs(cands, dyn)
		return nil
	}()
	if err != nil {
		return symtab{}, fmt.Errorf("its symbols could not be read: %w", err).Error()
	}
	if !hasSymtab && path != "" {
		n := len(cands)
		var debug string
		cands, debug, why = c.debugSymbols(cands, path)
		if why == "" && len(cands) == n {
			why = fmt.Sprintf("stripped, and its debug file %s has no function symbols", debug)
		}
	}
	if len(cands) == 0 {
		if why == "" {
			why = "it has no function symbols"
		}
		return symtab{}, why
	}
	return newSymtab(cands, segs), ""
}

// debugSymbols appends the function symbols of the debug file of the
// stripped binary at path, or says why there are none.
func (c *Collector) debugSymbols(cands []cand, path string) (_ []cand, debug, why string) {
	debug, err := elfsym.FindDebugFile(path, c.debugDirs)
	if err != nil {
		return cands, "", c.noDebugReason(err, path)
	}
	err = func() (err error) {
		defer guard(&err)
		df, err := elf.Open(debug)
		if err != nil {
			return err
		}
		defer df.Close()
		syms, err := df.Symbols()
		if err != nil {
			return err
		}
		cands = appendFuncs(cands, syms)
		return nil
	}()
	if err != nil {
		return cands, debug, fmt.Sprintf("stripped, and its debug file %s could not be read: %v", debug, err)
	}
	return cands, debug, ""
}

// noDebugReason says why a stripped binary has no debug file, as
// Object.NoSymbols: "stripped, and no debug file in /usr/lib/debug (build
// id abcd...)".
func (c *Collector) noDebugReason(err error, path string) string {
	var derr *elfsym.DebugFileError
	if !errors.As(err, &derr) {
		return fmt.Sprintf("stripped, and its debug file could not be looked for: %v", err)
	}
	if derr.Mismatch() {
		return "stripped, and the debug file found is from another build: " +
			strings.ReplaceAll(strings.Join(derr.Mismatches, "; "), path, "the binary")
	}
	if derr.BuildID == "" && derr.Link == "" {
		return "stripped, with neither a build id nor a .gnu_debuglink to find its debug file by"
	}
	var by []string
	if derr.BuildID != "" {
		by = append(by, "build id "+derr.BuildID)
	}
	if derr.Link != "" {
		by = append(by, "debuglink "+derr.Link)
	}
	if len(c.debugDirs) == 0 {
		return fmt.Sprintf("stripped, and no debug file next to it, and no debug directory to look in (%s)", strings.Join(by, ", "))
	}
	return fmt.Sprintf("stripped, and no debug file in %s (%s)", strings.Join(c.debugDirs, ", "), strings.Join(by, ", "))
}

// appendFuncs appends the functions defined among syms: STT_FUNC and
// STT_GNU_IFUNC, versions stripped from their names.
func appendFuncs(cands []cand, syms []elf.Symbol) []cand {
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if t != elf.STT_FUNC && t != elf.SymType(10) || s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		name := s.Name
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i]
		}
		if name == "" {
			continue
		}
		b := elf.ST_BIND(s.Info)
		cands = append(cands, cand{addr: s.Value, size: s.Size, name: name, global: b == elf.STB_GLOBAL, weak: b == elf.STB_WEAK})
	}
	return cands
}

// vdsoObject returns the object of a [vdso] mapping: its image, read from
// the process's memory once per image size (one per kernel and ABI), with
// the symbols of its .dynsym.
func (c *Collector) vdsoObject(pid uint32, l mapsLine) *object {
	size := l.end - l.start
	if o := c.vdso[size]; o != nil {
		return o
	}
	img, err := c.readVDSO(pid, l.start, size)
	if err != nil {
		if o := c.byPath["[vdso]"]; o != nil {
			return o
		}
		o := &object{path: "[vdso]", loaded: true, noSymbols: fmt.Sprintf("its image could not be read: %v", err)}
		c.byPath["[vdso]"] = o
		return o
	}
	o := &object{path: "[vdso]", loaded: true}
	r := bytes.NewReader(img)
	if o.segs, err = elfSegments(r); err != nil {
		o.noSymbols = fmt.Sprintf("its image is not a readable ELF file: %v", err)
	} else {
		o.buildID = imageBuildID(r)
		if same := c.byBuildID[o.buildID]; o.buildID != "" && same != nil {
			c.vdso[size] = same
			return same
		}
		o.tab, o.noSymbols = c.elfSymbols(r, "", o.segs)
		if o.buildID != "" {
			c.byBuildID[o.buildID] = o
		}
	}
	c.vdso[size] = o
	return o
}

func (c *Collector) readVDSO(pid uint32, start, size uint64) ([]byte, error) {
	if size > maxVDSO || start > 1<<62 {
		return nil, fmt.Errorf("[vdso] at %#x of %d bytes is implausible", start, size)
	}
	f, err := os.Open(filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10), "mem"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img := make([]byte, size)
	if _, err := f.ReadAt(img, int64(start)); err != nil {
		return nil, err
	}
	return img, nil
}

// imageBuildID returns the GNU build id of the ELF image r, "" without one.
func imageBuildID(r io.ReaderAt) (id string) {
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	ef, err := elf.NewFile(r)
	if err != nil {
		return ""
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if data, err := s.Data(); err == nil {
			if id := findBuildID(data, ef.ByteOrder); id != "" {
				return id
			}
		}
	}
	return ""
}

// noteBuildID returns the GNU build id in the ELF notes file at path
// (/sys/kernel/notes, /sys/module/NAME/notes/.note.gnu.build-id), ""
// when it cannot be read or holds none.
func noteBuildID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return ""
	}
	return findBuildID(data, binary.NativeEndian)
}

// findBuildID returns the hex descriptor of the first GNU build-id note
// (NT_GNU_BUILD_ID) of data, a sequence of 4-byte aligned ELF notes.
func findBuildID(data []byte, bo binary.ByteOrder) string {
	for len(data) >= 12 {
		namesz := uint64(bo.Uint32(data[0:]))
		descsz := uint64(bo.Uint32(data[4:]))
		typ := bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := (namesz + 3) &^ 3
		descEnd := nameEnd + (descsz+3)&^3
		if nameEnd > uint64(len(data)) || descEnd > uint64(len(data)) {
			return ""
		}
		if typ == 3 && string(bytes.TrimRight(data[:namesz], "\x00")) == "GNU" {
			return hex.EncodeToString(data[nameEnd : nameEnd+descsz])
		}
		data = data[descEnd:]
	}
	return ""
}
