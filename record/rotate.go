package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/internal/usage"
)

// MinMaxSize is the smallest Options.MaxSize: a capture's header alone
// takes a few KiB.
const MinMaxSize = 64 << 10

// errMaxSize stops a recording whose file reached Options.MaxSize.
var errMaxSize = errors.New("the capture reached --max-size")

// PartName is the name of part n (from 1) of a rotated capture: the
// sequence number goes before the extension, c.arrow giving c.000001.arrow.
func PartName(path string, n int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s.%06d%s", strings.TrimSuffix(path, ext), n, ext)
}

// sizeLimit enforces Options.MaxSize between samples: it stops the
// recording, or with Options.Rotate continues in the next part and deletes
// the oldest beyond Rotate. It goes by the part's projected size
// (format.Writer.Projected), not the bytes on disk, which lag behind the
// batches being compressed: by those, a 64 KiB part took 99 KiB.
type sizeLimit struct {
	w     *format.Writer
	max   int64
	keep  int // parts kept; 0: stop at max
	base  string
	force bool
	owner *Owner   // Options.Owner, given every new part
	seq   int      // number of the current part
	parts []string // kept parts, oldest first
	first string   // wall-clock start of the capture (of part 1), RFC 3339
	// earlier are the parts of an earlier recording to the same name that
	// --force replaces (see removeEarlier).
	earlier []string
}

// sizeOptions checks MaxSize and Rotate and, when rotating, makes Output
// the first part; it returns the output as given.
func (o *Options) sizeOptions() (base string, err error) {
	base = o.Output
	switch {
	case o.MaxSize < 0 || o.Rotate < 0:
		return "", usage.Errorf("negative --max-size or --rotate")
	case o.Rotate > 0 && o.MaxSize == 0:
		return "", usage.Errorf("--rotate needs --max-size")
	case o.MaxSize > 0 && o.MaxSize < MinMaxSize:
		return "", usage.Errorf("--max-size %d is below the minimum, %d bytes", o.MaxSize, MinMaxSize)
	}
	if o.Rotate > 0 {
		o.Output = PartName(base, 1)
		if old := partsOf(base); len(old) > 0 && !o.Force {
			return "", usage.Errorf("output: %s exists (a rotated capture): give --force to overwrite it, or another -o", old[0])
		}
	}
	return base, nil
}

// partsOf lists the parts of a rotated capture named base that exist.
func partsOf(base string) []string {
	ext := filepath.Ext(base)
	old, _ := filepath.Glob(strings.TrimSuffix(base, ext) + ".[0-9][0-9][0-9][0-9][0-9][0-9]" + ext)
	return old
}

// newSizeLimit returns the limit of a recording into w, nil without one.
func newSizeLimit(w *format.Writer, o *Options, base string) *sizeLimit {
	if o.MaxSize == 0 {
		return nil
	}
	l := &sizeLimit{w: w, max: o.MaxSize, keep: o.Rotate, base: base, force: o.Force, owner: o.Owner}
	if o.Rotate > 0 {
		l.seq, l.parts = 1, []string{o.Output}
		l.first = w.Meta().StartWall.Format(time.RFC3339Nano)
		if o.Force {
			l.earlier = partsOf(base)
		}
	}
	return l
}

// removeEarlier removes the parts of an earlier recording that this one,
// with --force, did not replace: those numbered after its last part. Left,
// they would read as this recording's later parts, and merge would join
// the two. It returns those it removed.
func (l *sizeLimit) removeEarlier() (removed []string, err error) {
	for _, path := range l.earlier {
		var n int
		if _, perr := fmt.Sscanf(strings.TrimPrefix(path, strings.TrimSuffix(l.base, filepath.Ext(l.base))), ".%06d", &n); perr != nil || n <= l.seq {
			continue // replaced by this recording's part n, or not a part
		}
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
			continue
		}
		removed = append(removed, path)
	}
	return removed, err
}

// Extra keys of a rotated capture's parts after the first (part 1 is an
// ordinary capture, started with the recording).
const (
	ExtraPart         = "rotate.part"          // the part's number, from 1
	ExtraPrevious     = "rotate.previous"      // the file name of the part before
	ExtraCaptureStart = "rotate.capture_start" // wall-clock start of part 1, RFC 3339
	ExtraMaxSize      = "rotate.max_size"      // --max-size in bytes
	ExtraKeep         = "rotate.keep"          // --rotate: parts kept
)

// partMeta makes the metadata of w describe part seq: its own start times,
// so that its relative times, --from and --to and its duration are its
// own, and where it stands in the ring. The part starts where the one
// before ended, at its last event (the events still in the ring buffer at
// the switch, which go to the new part, came after it), or now if there
// was none; the start wall-clock time is read with the boot time, as for
// part 1. format.Writer.Switch calls it between the two files.
func (l *sizeLimit) partMeta(seq int) {
	m := l.w.Meta()
	b1 := boottime.Now()
	wall := time.Now()
	b2 := boottime.Now()
	now := b1 + (b2-b1)/2
	start := now
	if last := l.w.LastTime(); last > 0 && last < now {
		start = last
	}
	m.StartBoot = start
	m.StartWall = wall.Add(-time.Duration(now - start))
	if m.Extra == nil {
		m.Extra = map[string]string{}
	}
	m.Extra[ExtraPart] = strconv.Itoa(seq)
	m.Extra[ExtraPrevious] = filepath.Base(PartName(l.base, seq-1))
	m.Extra[ExtraCaptureStart] = l.first
	m.Extra[ExtraMaxSize] = strconv.FormatInt(l.max, 10)
	m.Extra[ExtraKeep] = strconv.Itoa(l.keep)
}

// summarize reports the parts of a rotated recording in s.
func (l *sizeLimit) summarize(s *Summary) {
	if l == nil || len(l.parts) == 0 {
		return
	}
	s.Parts = append([]string(nil), l.parts...)
	s.EarlierRemoved, s.EarlierError = l.removeEarlier()
	s.Output = l.parts[len(l.parts)-1]
	if st, err := os.Stat(s.Output); err == nil {
		s.Bytes = st.Size()
	}
}

// check stops the recording or starts the next part when the current
// part, closed once its rows and those that may come before the next
// check (checkEvery) are written, would reach the limit: so a part stays
// within it, but for a first batch larger than the limit. A part with no
// rows yet stays, whatever its header takes.
func (l *sizeLimit) check() error {
	if l.w.FileRows() == 0 || l.w.Projected(checkEvery) < l.max {
		return nil
	}
	if l.keep == 0 {
		return errMaxSize
	}
	l.seq++
	name := PartName(l.base, l.seq)
	f, err := createOutput(name, &Options{Force: l.force})
	if err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	if err := l.owner.give(f); err != nil {
		f.Discard()
		return fmt.Errorf("rotate: %w", err)
	}
	seq := l.seq
	if err := l.w.Switch(keepOnClose{f}, func(*format.Meta) { l.partMeta(seq) }); err != nil {
		return fmt.Errorf("rotate to %s: %w", name, err)
	}
	l.parts = append(l.parts, name)
	for len(l.parts) > l.keep {
		if err := os.Remove(l.parts[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate: %w", err)
		}
		l.parts = l.parts[1:]
	}
	return nil
}
