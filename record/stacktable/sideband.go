package stacktable

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/record/sideband"
)

// Bounds on what the Collector keeps of the side-band, which tells of
// every process on the host, traced or not.
const (
	// maxSBProcs bounds the processes whose side-band mappings are kept:
	// past it, a quarter are forgotten, those that exited longest ago
	// first, then those quiet longest.
	maxSBProcs = 4096
	// maxSBMaps bounds the mappings kept of one image; later ones are
	// dropped.
	maxSBMaps = 1024
)

// Sideband is where the Collector reads the kernel's side-band records
// from: a *sideband.Reader. Read calls f with every record written since
// the last call, in time order.
type Sideband interface {
	Read(f func(*sideband.Record))
}

// UseSideband makes the Collector read s before it resolves a new stack
// (and in Sync): the mappings and execs it tells of come before the stacks
// that need them. They are what the Collector uses where /proc/PID/maps
// cannot serve, for a process that exited, or for the stacks taken before
// an exec; and an exec starts a new image at its own time.
func (c *Collector) UseSideband(s Sideband) { c.sb, c.sbFn = s, c.sideband }

// Sync reads what the side-band holds, if there is one. The recorder
// calls it as it drains, so that the side-band's rings do not fill while
// no new stack comes.
func (c *Collector) Sync() {
	if c.sb != nil {
		c.sb.Read(c.sbFn)
	}
}

// sbProc is what the side-band told of a process: its images, oldest
// first, each with the executable mappings made in it.
type sbProc struct {
	images []*sbImage
	exited int64 // the time of its exit; 0 while it runs
	lastT  int64 // the time of its last record
}

// sbImage is what the side-band told of one image of a process.
type sbImage struct {
	since int64 // the exec or fork that began it; 0: before the side-band did
	maps  []sbMap
}

// sbMap is a mapping the side-band told of, at time t.
type sbMap struct {
	start, end, off uint64
	maj, min        uint32
	ino             uint64
	buildID, path   string
	t               int64
}

// at returns the image of s in force at t, nil if none is.
func (s *sbProc) at(t int64) *sbImage {
	for i := len(s.images) - 1; i >= 0; i-- {
		if s.images[i].since <= t {
			return s.images[i]
		}
	}
	return nil
}

// add appends an image beginning at since, dropping the oldest past
// maxImages.
func (s *sbProc) add(img *sbImage) {
	i := len(s.images)
	for i > 0 && s.images[i-1].since > img.since {
		i--
	}
	s.images = slices.Insert(s.images, i, img)
	if len(s.images) > maxImages {
		s.images = slices.Delete(s.images, 0, len(s.images)-maxImages)
	}
}

// sideband applies one side-band record.
func (c *Collector) sideband(r *sideband.Record) {
	c.sbMaxT = max(c.sbMaxT, r.Time)
	switch r.Kind {
	case sideband.Mmap:
		if r.Path == "//anon" || isAnonymous(r.Path) || r.Start+r.Len < r.Start || r.Start >= userLimit {
			// Anonymous code (JIT, [uprobes]' slots): no object to
			// read, nothing kept.
			return
		}
		s := c.sbProc(r.PID, r.Time)
		img := s.at(r.Time)
		if img == nil {
			img = &sbImage{}
			s.add(img)
		}
		m := sbMap{start: r.Start, end: r.Start + r.Len, off: r.Pgoff, maj: r.Maj, min: r.Min, ino: r.Ino,
			buildID: r.BuildID, path: r.Path, t: r.Time}
		// A mapping replaces what it overlaps, as in the process.
		img.maps = slices.DeleteFunc(img.maps, func(o sbMap) bool { return o.start < m.end && m.start < o.end })
		if len(img.maps) < maxSBMaps {
			img.maps = append(img.maps, m)
		}
	case sideband.Exec:
		c.sbProc(r.PID, r.Time).add(&sbImage{since: r.Time})
		if p := c.procs[r.PID]; p != nil {
			c.push(r.PID, &process{since: r.Time, lastT: p.lastT})
		}
	case sideband.Fork:
		// The child runs its parent's image, whose mappings it has:
		// those the side-band told of, and those read of the parent.
		img := &sbImage{since: r.Time}
		if s := c.sbp[r.PPID]; s != nil {
			if pi := s.at(r.Time); pi != nil {
				img.maps = slices.Clone(pi.maps)
			}
		}
		if pp := c.procs[r.PPID]; pp != nil {
			for _, m := range pp.at(r.Time).maps {
				if m.obj != nil && !hasMap(img.maps, m.start, m.end, m.off, m.path) && len(img.maps) < maxSBMaps {
					img.maps = append(img.maps, fromPmap(m, r.Time))
				}
			}
		}
		if len(img.maps) == 0 && c.sbp[r.PID] == nil && c.procs[r.PID] == nil {
			return // a fork of a process nothing is known of
		}
		c.sbProc(r.PID, r.Time).add(img)
		if p := c.procs[r.PID]; p != nil {
			// A pid used again: a new process, not the old one.
			c.push(r.PID, &process{since: r.Time, lastT: p.lastT})
		}
	case sideband.Exit:
		if s := c.sbp[r.PID]; s != nil {
			s.exited = r.Time
		}
	case sideband.Lost:
		c.sbLost += r.Lost
	}
}

// sbProc returns the side-band state of pid, made if need be.
func (c *Collector) sbProc(pid uint32, t int64) *sbProc {
	s := c.sbp[pid]
	if s == nil {
		if len(c.sbp) >= maxSBProcs {
			c.sweepSideband()
		}
		s = &sbProc{}
		c.sbp[pid] = s
	}
	s.lastT = max(s.lastT, t)
	return s
}

// sweepSideband forgets a quarter of the processes the side-band told
// of: first those that exited more than forgetAfter ago (their stacks,
// drained within about a second, have come by then), then those running
// (whose /proc/PID/maps can still be read) quiet longest, then those that
// exited since, longest ago first.
func (c *Collector) sweepSideband() {
	c.sbSweeps++
	type aged struct {
		pid uint32
		key int64
	}
	all := make([]aged, 0, len(c.sbp))
	for pid, s := range c.sbp {
		key := s.exited
		switch {
		case s.exited == 0:
			key = 1<<61 + s.lastT
		case c.sbMaxT-s.exited < forgetAfter:
			key = 1<<62 + s.exited
		}
		all = append(all, aged{pid, key})
	}
	slices.SortFunc(all, func(a, b aged) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	for _, a := range all[:len(all)/4] {
		delete(c.sbp, a.pid)
	}
}

// fromSideband adds to p, an image of pid, the mappings the side-band told
// of in it that it lacks, and reports whether there were any.
func (c *Collector) fromSideband(pid uint32, p *process) bool {
	s := c.sbp[pid]
	if s == nil {
		return false
	}
	var img *sbImage
	for _, i := range s.images {
		if i.since == p.since {
			img = i
		}
	}
	if img == nil {
		return false
	}
	added := false
	for _, m := range img.maps {
		if hasPmap(p.maps, m) {
			continue
		}
		l := mapsLine{start: m.start, end: m.end, off: m.off, perms: "r-xp", path: m.path, sb: true, buildID: m.buildID}
		if m.buildID == "" {
			l.dev, l.ino = fmt.Sprintf("%02x:%02x", m.maj, m.min), strconv.FormatUint(m.ino, 10)
		}
		p.maps = append(p.maps, c.newPmap(pid, l, m.t))
		added = true
	}
	if !added {
		return false
	}
	sortMaps(p.maps)
	p.read, p.err, p.fruitless = true, "", 0
	return true
}

// hasMap reports whether maps holds the mapping of path at [start, end)
// and offset off.
func hasMap(maps []sbMap, start, end, off uint64, path string) bool {
	return slices.ContainsFunc(maps, func(m sbMap) bool {
		return m.start == start && m.end == end && m.off == off && m.path == path
	})
}

// hasPmap reports whether maps holds the side-band mapping m.
func hasPmap(maps []*pmap, m sbMap) bool {
	return slices.ContainsFunc(maps, func(o *pmap) bool {
		return o.start == m.start && o.end == m.end && o.off == m.off && o.path == m.path
	})
}

// fromPmap is the mapping m, read from /proc, as the side-band would tell
// of it at t.
func fromPmap(m *pmap, t int64) sbMap {
	s := sbMap{start: m.start, end: m.end, off: m.off, path: m.path, t: t}
	if m.obj != nil {
		s.buildID = m.obj.buildID
	}
	if maj, min, ok := strings.Cut(m.dev, ":"); ok {
		a, _ := strconv.ParseUint(maj, 16, 32)
		b, _ := strconv.ParseUint(min, 16, 32)
		s.maj, s.min = uint32(a), uint32(b)
	}
	s.ino, _ = strconv.ParseUint(m.ino, 10, 64)
	return s
}

// mismatch says why the file opened for the side-band mapping l (of key,
// with build id buildID if l has one) is not the one the process mapped,
// "" when it is (or cannot be told): its build id, else its inode, must
// be the record's. (Not the device: the stat of a file on btrfs or
// overlayfs gives another than the kernel's records do.)
func mismatch(l mapsLine, key fileKey, buildID string) string {
	switch {
	case !l.sb:
		return ""
	case l.buildID != "" && l.buildID != buildID:
		if buildID == "" {
			buildID = "none"
		}
		return fmt.Sprintf("the file at its path now has build id %s, not the mapped file's %s", buildID, l.buildID)
	case l.buildID == "" && l.ino != "" && strconv.FormatUint(key.ino, 10) != l.ino:
		return fmt.Sprintf("the file at its path now is inode %d, not the mapped file's %s (device %s; this one's %02x:%02x)",
			key.ino, l.ino, l.dev, unix.Major(key.dev), unix.Minor(key.dev))
	}
	return ""
}
