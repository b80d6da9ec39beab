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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bpftape/bpftape/record/elfsym"
)

// maxVDSO bounds the size of a [vdso] image read from a process's memory.
const maxVDSO = 1 << 20

// Bounds on the time the Collector waits for what it reads of a traced
// process (its maps, its files and their symbols), which may be slow or
// never come: a huge binary, a hung network or FUSE file system that the
// traced user controls (see doc.go).
const (
	// maxOverruns is how many reads may overrun readBudget in a
	// recording; after them, no more are made.
	maxOverruns = 3
	// EndBudget is how long the reads left when a recording ends may
	// take in all: see Collector.Hurry.
	EndBudget = 500 * time.Millisecond
)

// readBudget is how long one read is waited for; past it, the read is
// left to finish on its own goroutine and its result is thrown away. The
// largest symbol tables on the 6.18 host took 12-50 ms (libLLVM-15, 117
// MB, 35,000 functions). A variable for the tests.
var readBudget = time.Second

// reads bounds the waits of a Collector for its reads. The zero value is
// ready.
type reads struct {
	overruns int // reads that overran readBudget (the Collector's goroutine only)
	skipped  int // reads not made or not waited for (likewise)

	once  sync.Once
	ended chan struct{} // closed by Hurry
	endBy atomic.Int64  // after Hurry: the time (Unix ns) when waiting ends
	stuck atomic.Int32  // overrun reads still running
}

// end returns the channel that Hurry closes.
func (r *reads) end() chan struct{} {
	r.once.Do(func() { r.ended = make(chan struct{}) })
	return r.ended
}

// Hurry bounds the reads left: from now on the Collector waits for a read
// of a traced process's files, maps or memory only until d from now, and
// starts none after that; an object or process whose read is cut short
// says so in the table (Object.NoSymbols, ProcessNote). The recorder calls
// it when the recording ends, before the last records are drained, so
// that no read delays the end of the capture for more than d. Unlike the
// other methods, it may be called from any goroutine; the first call
// counts.
func (c *Collector) Hurry(d time.Duration) {
	r := &c.reads
	if r.endBy.CompareAndSwap(0, time.Now().Add(d).UnixNano()) {
		close(r.end())
	}
}

// readFile runs read on a goroutine of its own and waits for it at most
// readBudget (less once Hurry was called), so that no read of what a traced
// process controls can stall the caller (the recorder's drain loop) for
// long. When read is not run (too late, too many overruns before) or
// overruns, late says why and v is the zero value, and drop releases what
// read would have: it is called at once with the zero value when read was
// not run, else with read's result when it comes. read must not touch the
// Collector's state, which the caller keeps using.
func readFile[T any](r *reads, read func() T, drop func(T)) (v T, late string) {
	defer func() {
		if late != "" {
			r.skipped++
		}
	}()
	budget := readBudget
	ending := false
	if end := r.endBy.Load(); end != 0 {
		ending = true
		if budget = min(budget, time.Until(time.Unix(0, end))); budget <= 0 {
			drop(v)
			return v, "the recording was ending"
		}
	}
	if r.overruns >= maxOverruns {
		drop(v)
		return v, fmt.Sprintf("%d reads took more than %v each, so no more are made (a slow or hung file system?)", r.overruns, readBudget)
	}
	ch := make(chan T, 1)
	go func() { ch <- read() }()
	start := time.Now()
	timer := time.NewTimer(budget)
	defer timer.Stop()
	ended := r.end()
	if ending {
		ended = nil
	}
wait:
	for {
		select {
		case v = <-ch:
			return v, ""
		case <-ended:
			ended, ending = nil, true
			if left := time.Until(time.Unix(0, r.endBy.Load())); left < budget-time.Since(start) {
				timer.Reset(max(left, 0))
			}
		case <-timer.C:
			break wait
		}
	}
	r.stuck.Add(1)
	go func() {
		drop(<-ch)
		r.stuck.Add(-1)
	}()
	if ending {
		return v, "the recording was ending"
	}
	r.overruns++
	return v, fmt.Sprintf("reading took more than %v (a slow or hung file system?)", readBudget)
}

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
	reopen    []where // else the paths to open it by again...
	key       fileKey // ...if it is still this file
	loaded    bool    // tab and noSymbols are known
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

// where is a way to open a mapped object's file (see identify).
type where struct {
	root, path string // path inside root, if root is set
	links      elfsym.Links
}

func (w where) open() (*os.File, error) {
	if w.root != "" {
		return elfsym.OpenInRoot(w.root, w.path)
	}
	return elfsym.OpenRegular(w.path, w.links)
}

// identify returns the object of the executable mapping l of pid, nil
// for anonymous memory (JIT code) that no object covers. A file is opened
// through /proc/PID/map_files, which reaches the mapped file even when
// its path is deleted, replaced or in another mount namespace; failing
// that (no CAP_SYS_ADMIN, or the process has exited), by its path inside
// /proc/PID/root, then by its path here, following no link (see package
// elfsym). A mapping the side-band told of must then be the same file by
// its build id or inode (mismatch). Opening and reading run off the
// caller's goroutine, within the read budget (see readFile).
func (c *Collector) identify(pid uint32, l mapsLine) *object {
	if l.path == "[vdso]" {
		return c.vdsoObject(pid, l)
	}
	if isAnonymous(l.path) {
		return nil
	}
	dir := filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10))
	ws := []where{{path: filepath.Join(dir, "map_files", strconv.FormatUint(l.start, 16)+"-"+strconv.FormatUint(l.end, 16)), links: elfsym.FollowLinks}}
	if p := strings.TrimSuffix(l.path, " (deleted)"); strings.HasPrefix(p, "/") {
		ws = append(ws, where{root: filepath.Join(dir, "root"), path: p}, where{path: p, links: elfsym.NoLinks})
	}
	type opened struct {
		f        *os.File
		key      fileKey
		err      error
		mismatch string
	}
	r, late := readFile(&c.reads, func() (r opened) {
		for _, w := range ws {
			f, err := w.open()
			if err != nil {
				if r.err == nil {
					r.err = err
				}
				continue
			}
			if r.key, err = keyOf(f); err != nil {
				f.Close()
				r.err = err
				continue
			}
			id := ""
			if l.sb && l.buildID != "" {
				id = fileBuildID(fdPath(f))
			}
			if why := mismatch(l, r.key, id); why != "" {
				// The range mapped by what the process exec'd since,
				// or the path holding another file now: the next way.
				f.Close()
				r.mismatch = why
				continue
			}
			r.f, r.err = f, nil
			break
		}
		return r
	}, func(r opened) {
		if r.f != nil {
			r.f.Close()
		}
	})
	if r.f == nil && r.mismatch != "" && late == "" {
		return &object{path: l.path, loaded: true, noSymbols: r.mismatch}
	}
	if r.f == nil {
		if o := c.byPath[l.path]; o != nil {
			return o
		}
		why := fmt.Sprintf("it could not be opened: %v", r.err)
		if late != "" {
			why = "it was not opened: " + late
		}
		o := &object{path: l.path, loaded: true, noSymbols: why}
		c.byPath[l.path] = o
		return o
	}
	return c.fileObject(l, r.f, r.key, ws)
}

// fileObject returns the object of f, the open file of mapping l (with
// key), opened by one of ws; it takes f.
func (c *Collector) fileObject(l mapsLine, f *os.File, key fileKey, ws []where) *object {
	if o := c.byFile[key]; o != nil {
		f.Close()
		return o
	}
	o := &object{path: l.path}
	type header struct {
		segs    []segment
		buildID string
		err     error
	}
	h, late := readFile(&c.reads, func() (h header) {
		if h.segs, h.err = elfSegments(f); h.err == nil {
			h.buildID = fileBuildID(fdPath(f))
		}
		return h
	}, func(header) { f.Close() })
	switch {
	case late != "":
		o.loaded, o.noSymbols = true, "its headers were not read: "+late
		c.byFile[key] = o
		return o
	case h.err != nil:
		f.Close()
		o.loaded, o.noSymbols = true, fmt.Sprintf("not a readable ELF file: %v", h.err)
		c.byFile[key] = o
		return o
	}
	o.segs = h.segs
	if id := h.buildID; id != "" {
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
		o.reopen, o.key = ws, key
	}
	return o
}

// keyOf returns the fileKey of the open file f.
func keyOf(f *os.File) (fileKey, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileKey{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, fmt.Errorf("%s: no stat_t", f.Name())
	}
	return fileKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtimeSec: st.Mtim.Sec, mtimeNsec: st.Mtim.Nsec}, nil
}

// reopenFile opens o's file again by the paths it was found by, if it is
// still the same file.
func (o *object) reopenFile() (*os.File, error) {
	err := errors.New("no path to open it by")
	for _, w := range o.reopen {
		f, ferr := w.open()
		if ferr != nil {
			err = ferr
			continue
		}
		if key, kerr := keyOf(f); kerr == nil && key == o.key {
			return f, nil
		}
		f.Close()
		err = fmt.Errorf("%s is another file now", w.path)
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

// loadSymbols reads o's function symbols, once, and closes its file. The
// reading runs off the caller's goroutine, within the read budget (see
// readFile).
func (c *Collector) loadSymbols(o *object) {
	if o.loaded {
		return
	}
	o.loaded = true
	f := o.file
	o.file = nil
	if f != nil {
		c.openFiles--
	}
	type result struct {
		tab symtab
		why string
		ran bool // f is closed
	}
	dirs, segs := c.debugDirs, o.segs
	r, late := readFile(&c.reads, func() result {
		file := f
		if file == nil {
			var err error
			if file, err = o.reopenFile(); err != nil {
				return result{why: fmt.Sprintf("it could not be opened again for its symbols: %v", err), ran: true}
			}
		}
		defer file.Close()
		tab, why := elfSymbols(file, fdPath(file), segs, dirs)
		return result{tab, why, true}
	}, func(r result) {
		if !r.ran && f != nil {
			f.Close()
		}
	})
	if late != "" {
		o.noSymbols = "its symbols were not read: " + late
		return
	}
	o.tab, o.noSymbols = r.tab, r.why
}

// maxSymbolBytes bounds a symbol table read (.symtab or .dynsym, with its
// string table): debug/elf holds all of it in memory, a few times over.
// The largest programs' tables (a browser's, unstripped) are some 200 MB.
const maxSymbolBytes = 256 << 20

// elfSymbols returns the function symbols of the ELF file r: its .symtab
// and .dynsym, and when it has no .symtab (stripped) its separate debug
// file's, found from path (elfsym.OpenDebugFile in dirs); with none at
// all, it says why instead.
func elfSymbols(r io.ReaderAt, path string, segs []segment, dirs []string) (tab symtab, why string) {
	var cands []cand
	hasSymtab := false
	err := func() (err error) {
		defer guard(&err)
		ef, err := elf.NewFile(r)
		if err != nil {
			return err
		}
		if err := checkSymbolBytes(ef); err != nil {
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
		cands, debug, why = debugSymbols(cands, path, dirs)
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

// checkSymbolBytes returns an error when a symbol table of ef and its
// string table hold more than maxSymbolBytes.
func checkSymbolBytes(ef *elf.File) error {
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_SYMTAB && s.Type != elf.SHT_DYNSYM {
			continue
		}
		n := s.Size
		if int(s.Link) < len(ef.Sections) {
			n += ef.Sections[s.Link].Size
		}
		if n > maxSymbolBytes {
			return fmt.Errorf("%s and its strings are %d MB, more than the %d MB read", s.Name, n>>20, maxSymbolBytes>>20)
		}
	}
	return nil
}

// debugSymbols appends the function symbols of the debug file of the
// stripped binary at path, or says why there are none.
func debugSymbols(cands []cand, path string, dirs []string) (_ []cand, debug, why string) {
	var df *os.File
	err := func() (err error) {
		defer guard(&err)
		df, debug, err = elfsym.OpenDebugFile(path, dirs)
		return err
	}()
	if err != nil {
		return cands, "", noDebugReason(err, path, dirs)
	}
	defer df.Close()
	err = func() (err error) {
		defer guard(&err)
		ef, err := elf.NewFile(df)
		if err != nil {
			return err
		}
		if err := checkSymbolBytes(ef); err != nil {
			return err
		}
		syms, err := ef.Symbols()
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
func noDebugReason(err error, path string, dirs []string) string {
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
	refused := ""
	if len(derr.Refused) > 0 {
		// A debuglink naming a FIFO, a device or a link next to it.
		refused = "; refused " + strings.ReplaceAll(strings.Join(derr.Refused, "; "), path, "the binary")
	}
	if len(dirs) == 0 {
		return fmt.Sprintf("stripped, and no debug file next to it, and no debug directory to look in (%s)%s", strings.Join(by, ", "), refused)
	}
	return fmt.Sprintf("stripped, and no debug file in %s (%s)%s", strings.Join(dirs, ", "), strings.Join(by, ", "), refused)
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
	type image struct {
		img []byte
		err error
	}
	im, late := readFile(&c.reads, func() image {
		img, err := c.readVDSO(strconv.FormatUint(uint64(pid), 10), l.start, size)
		if err != nil && l.sb {
			// The process is gone: the kernel gives every process of
			// an ABI the same image, ours if it is the same size.
			if self, serr := c.selfVDSO(size); serr == nil {
				img, err = self, nil
			}
		}
		return image{img, err}
	}, func(image) {})
	img, err := im.img, im.err
	if late != "" {
		err = errors.New(late)
	}
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
		o.tab, o.noSymbols = elfSymbols(r, "", o.segs, nil)
		if o.buildID != "" {
			c.byBuildID[o.buildID] = o
		}
	}
	c.vdso[size] = o
	return o
}

// selfVDSO reads this process's [vdso] image if it is size bytes.
func (c *Collector) selfVDSO(size uint64) ([]byte, error) {
	lines, err := c.mapsLinesOf("self")
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if l.path == "[vdso]" && l.end-l.start == size {
			return c.readVDSO("self", l.start, size)
		}
	}
	return nil, errors.New("no [vdso] of that size here")
}

// readVDSO reads the [vdso] image of size bytes at start of the process
// of /proc/PID (pid: "self" or a number).
func (c *Collector) readVDSO(pid string, start, size uint64) ([]byte, error) {
	if size > maxVDSO || start > 1<<62 {
		return nil, fmt.Errorf("[vdso] at %#x of %d bytes is implausible", start, size)
	}
	f, err := os.Open(filepath.Join(c.proc, pid, "mem"))
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
