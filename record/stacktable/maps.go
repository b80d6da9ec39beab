package stacktable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// maxMapsBytes bounds the /proc/PID/maps read (a process with a million
// mappings has some 100 MB of them; its later mappings are left out).
const maxMapsBytes = 64 << 20

// Reasons for a ProcessNote: the maps of a process could not be read
// because it had exited, or (for the stacks before an exec) because it had
// exec'd; the side-band, when there is one, had none either.
const (
	exitedReason = "exited before its mappings were read"
	execReason   = "exec'd before its mappings were read"
	raceReason   = "exec'd as its mappings were read"
)

// process is what the collector knows of one image of a process: what an
// exec started (or a fork, or what the process ran when first seen), until
// the next.
type process struct {
	maps      []*pmap // its executable mappings as last read, by start
	read      bool    // its maps were read at least once
	err       string  // why the last read failed
	lastRead  int64   // boot-clock time of the last read
	fruitless int     // re-reads in a row that found nothing new
	lastT     int64   // time of its last stack (kept on the newest image)
	addrs     map[uint64]bool

	since int64    // when the image began (the exec's time); 0: before all that is known
	gen   uint32   // tells images apart in Collector.seen
	prev  *process // the image before, if kept
}

// pmap is one executable mapping of a process.
type pmap struct {
	start, end, off uint64
	dev, ino        string // as maps prints them, to tell a changed mapping
	path            string
	obj             *object // nil: anonymous (JIT code...) or unusable
	bias            uint64
	since           int64
	emitted         bool // in the table
}

// find returns the mapping covering a, or nil.
func (p *process) find(a uint64) *pmap {
	i, _ := slices.BinarySearchFunc(p.maps, a, func(m *pmap, a uint64) int {
		switch {
		case m.end <= a:
			return -1
		case m.start > a:
			return 1
		}
		return 0
	})
	if i < len(p.maps) && p.maps[i].start <= a && a < p.maps[i].end {
		return p.maps[i]
	}
	return nil
}

// mayReread reports whether the maps may be read again at t (see
// maxFruitless).
func (p *process) mayReread(t int64) bool {
	return p.fruitless < maxFruitless || t-p.lastRead >= rereadBackoff
}

// mapsLine is one parsed line of /proc/PID/maps, or a mapping the
// side-band told of (then sb is set, and buildID may be).
type mapsLine struct {
	start, end, off uint64
	perms           string
	dev, ino        string
	path            string

	sb      bool
	buildID string // hex
}

// parseMapsLine parses "START-END PERMS OFFSET DEV INODE [PATH]"; the path
// may hold spaces, and ends with " (deleted)" for a deleted file.
func parseMapsLine(line []byte) (mapsLine, bool) {
	var l mapsLine
	var f [5][]byte
	rest := line
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i < 4 {
				return l, false
			}
			j = len(rest)
		}
		f[i], rest = rest[:j], rest[j:]
	}
	lo, hi, ok := bytes.Cut(f[0], []byte{'-'})
	if !ok {
		return l, false
	}
	var err1, err2, err3 error
	l.start, err1 = strconv.ParseUint(string(lo), 16, 64)
	l.end, err2 = strconv.ParseUint(string(hi), 16, 64)
	l.off, err3 = strconv.ParseUint(string(f[2]), 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || l.end <= l.start || len(f[1]) < 3 {
		return l, false
	}
	l.perms, l.dev, l.ino = string(f[1]), string(f[3]), string(f[4])
	l.path = string(bytes.TrimLeft(rest, " "))
	return l, true
}

// readMaps reads pid's executable mappings at t into p, the process's
// newest image (see applyMaps), and reports whether any is new. A failure
// leaves p's mappings as they were, and p.err says why.
func (c *Collector) readMaps(pid uint32, p *process, t int64) bool {
	lines, ok := c.readLines(pid, p, t)
	if !ok {
		return false
	}
	return c.applyMaps(pid, p, lines, t)
}

// readLines reads the executable mappings of /proc/PID/maps at t for p,
// pid's newest image. When that fails, or when the side-band tells
// meanwhile of an exec that may have come before the read, it reports
// false and p.err says why.
func (c *Collector) readLines(pid uint32, p *process, t int64) ([]mapsLine, bool) {
	p.lastRead = max(p.lastRead, t)
	type read struct {
		lines []mapsLine
		err   error
	}
	r, late := readFile(&c.reads, func() read {
		lines, err := c.mapsLines(pid)
		return read{lines, err}
	}, func(read) {})
	lines, err := r.lines, r.err
	if late != "" {
		err = fmt.Errorf("its mappings were not read: %s", late)
	}
	if err == nil && c.sb != nil {
		// The lines are p's only if the process did not exec before
		// they were read: the side-band has every exec before now.
		c.Sync()
		if c.procs[pid] != p {
			err = errors.New(raceReason)
		}
	}
	if err != nil {
		p.err = err.Error()
		p.fruitless++
		return nil, false
	}
	return lines, true
}

// applyMaps makes lines, read at t, p's mappings, keeping the ones it
// knew that are still there as they were, and identifying the objects of
// the new ones; it reports whether any is new. The mappings of an image's
// first read are taken from its start (its exec), those of later reads
// from t.
func (c *Collector) applyMaps(pid uint32, p *process, lines []mapsLine, t int64) bool {
	since := t
	if !p.read && p.since > 0 {
		since = p.since
	}
	old := make(map[mapsKey]*pmap, len(p.maps))
	for _, m := range p.maps {
		old[mapsKey{m.start, m.end, m.off, m.dev, m.ino, m.path}] = m
	}
	maps := make([]*pmap, 0, len(lines))
	changed := false
	for _, l := range lines {
		if m := old[mapsKey{l.start, l.end, l.off, l.dev, l.ino, l.path}]; m != nil {
			maps = append(maps, m)
			continue
		}
		switch l.path {
		case "[vsyscall]", "[uprobes]":
			// The legacy vsyscall page (above user space) and the uprobes'
			// out-of-line single-step slots.
			continue
		}
		changed = true
		maps = append(maps, c.newPmap(pid, l, since))
	}
	sortMaps(maps)
	if len(maps) != len(p.maps) {
		changed = true
	}
	p.maps, p.read, p.err = maps, true, ""
	if changed {
		p.fruitless = 0
	} else {
		p.fruitless++
	}
	return changed
}

// newPmap returns the mapping of l in process pid since t, its object
// identified.
func (c *Collector) newPmap(pid uint32, l mapsLine, since int64) *pmap {
	m := &pmap{start: l.start, end: l.end, off: l.off, dev: l.dev, ino: l.ino, path: l.path, since: since}
	m.obj = c.identify(pid, l)
	if m.obj != nil {
		m.bias = bias(m.start, m.off, m.obj.segs)
	}
	return m
}

// sortMaps sorts mappings by start.
func sortMaps(maps []*pmap) {
	slices.SortFunc(maps, func(a, b *pmap) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
}

// load reads the mappings of image p of pid for a stack at t, the first
// time: from /proc while p is the process's newest image, else (or when
// that fails: the process has exited) from what the side-band told of
// the image.
func (c *Collector) load(pid uint32, p *process, t int64) {
	if c.procs[pid] == p {
		if c.readMaps(pid, p, t); p.read {
			return
		}
	} else {
		p.lastRead = max(p.lastRead, t)
		p.fruitless++
		if p.err == "" {
			p.err = execReason
		}
	}
	c.fromSideband(pid, p)
}

// refresh reads the mappings of p, an image of pid already read, again
// for a frame at t outside all of them: from /proc while p is the newest
// image, else (or when that fails) from the side-band. It reports whether
// any is new.
func (c *Collector) refresh(pid uint32, p *process, t int64) bool {
	if c.procs[pid] == p {
		lines, ok := c.readLines(pid, p, t)
		if ok {
			return c.applyMaps(pid, p, lines, t)
		}
	} else {
		p.lastRead = max(p.lastRead, t)
		p.fruitless++
	}
	return c.fromSideband(pid, p)
}

type mapsKey struct {
	start, end, off uint64
	dev, ino, path  string
}

// mapsLines returns the executable mappings of /proc/PID/maps. A process
// that has exited (no maps, or the empty maps of a zombie) is an error
// saying so.
func (c *Collector) mapsLines(pid uint32) ([]mapsLine, error) {
	return c.mapsLinesOf(strconv.FormatUint(uint64(pid), 10))
}

// mapsLinesOf is mapsLines of /proc/PID, pid "self" or a number.
func (c *Collector) mapsLinesOf(pid string) ([]mapsLine, error) {
	name := filepath.Join(c.proc, pid, "maps")
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New(exitedReason)
		}
		return nil, fmt.Errorf("its mappings could not be read: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMapsBytes))
	if errors.Is(err, syscall.ESRCH) {
		return nil, errors.New(exitedReason) // it exited as we read
	}
	if err != nil {
		return nil, fmt.Errorf("its mappings could not be read: %w", err)
	}
	if len(data) == 0 {
		return nil, errors.New(exitedReason)
	}
	var lines []mapsLine
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		l, ok := parseMapsLine(line)
		if ok && l.perms[2] == 'x' {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// bias is the Bias of a mapping of [start, ...) at file offset off of an
// object with the PT_LOAD segments segs: the object address of a runtime
// address a is a - bias. The segment holding off gives it (Start is the
// segment's page-aligned address, Offset its page-aligned file offset);
// without one, the object's addresses are taken to be file offsets.
func bias(start, off uint64, segs []segment) uint64 {
	found := -1
	for i, s := range segs {
		if s.off&^0xfff <= off && off < s.off+s.filesz {
			if found < 0 || s.exec && !segs[found].exec {
				found = i
			}
		}
	}
	if found < 0 {
		return start - off
	}
	s := segs[found]
	return start - off + s.off - s.vaddr
}

// isAnonymous reports whether a mapping's path names no file: none, or a
// bracketed kernel name ("[anon:name]", "[stack]") other than [vdso].
func isAnonymous(path string) bool {
	return path == "" || strings.HasPrefix(path, "[") && path != "[vdso]"
}
