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

// exitedReason is the ProcessNote of a process whose maps could not be read
// because it had exited.
const exitedReason = "exited before its mappings were read"

// process is what the collector knows of one process.
type process struct {
	maps      []*pmap // its executable mappings as last read, by start
	read      bool    // its maps were read at least once
	err       string  // why the last read failed
	lastRead  int64   // boot-clock time of the last read
	fruitless int     // re-reads in a row that found nothing new
	lastT     int64   // time of its last stack
	addrs     map[uint64]bool
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

// mapsLine is one parsed line of /proc/PID/maps.
type mapsLine struct {
	start, end, off uint64
	perms           string
	dev, ino        string
	path            string
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

// readMaps reads pid's executable mappings at t into p, keeping the
// mappings it knew that are still there as they were, and identifying the
// objects of the new ones; it reports whether any is new. A failure leaves
// p's mappings as they were.
func (c *Collector) readMaps(pid uint32, p *process, t int64) bool {
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
	if err != nil {
		p.err = err.Error()
		p.fruitless++
		return false
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
		m := &pmap{start: l.start, end: l.end, off: l.off, dev: l.dev, ino: l.ino, path: l.path, since: t}
		m.obj = c.identify(pid, l)
		if m.obj != nil {
			m.bias = bias(m.start, m.off, m.obj.segs)
		}
		maps = append(maps, m)
	}
	slices.SortFunc(maps, func(a, b *pmap) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
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

type mapsKey struct {
	start, end, off uint64
	dev, ino, path  string
}

// mapsLines returns the executable mappings of /proc/PID/maps. A process
// that has exited (no maps, or the empty maps of a zombie) is an error
// saying so.
func (c *Collector) mapsLines(pid uint32) ([]mapsLine, error) {
	name := filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10), "maps")
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
