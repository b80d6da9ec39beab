// Package rows walks every row of a capture, loss records where they are
// among the events, for the tools that must place losses (exports, time
// lines) where replay.Capture.Scan only tallies them.
package rows

import (
	"fmt"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// Walk calls fn for every event that passes f and every loss record in f's
// time window (loss records have no process), in file order, with lost set
// for loss records. Like replay.Capture.Scan it counts c.Events and tallies
// every loss record into c.Losses, so that c.Notes can warn about them.
func Walk(c *replay.Capture, f *replay.Filter, fn func(b *format.Batch, i int, lost bool) error) error {
	if f == nil {
		f = &replay.Filter{}
	}
	m := c.Meta()
	for c.R.Next() {
		b := c.R.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				c.Losses.Add(m.Probes[b.Probe[i]].Name, b.CPU[i], b.Time[i], n)
				if !InWindow(f, b.Time[i], m.StartBoot) {
					continue
				}
				if err := fn(b, i, true); err != nil {
					return err
				}
				continue
			}
			c.Events++
			c.Times.Check(b.Time[i], m)
			if !f.Match(b, i, m.StartBoot) {
				continue
			}
			if err := fn(b, i, false); err != nil {
				return err
			}
		}
	}
	if err := c.R.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	return nil
}

// InWindow reports whether boot-clock time t is within f's From and To.
func InWindow(f *replay.Filter, t, startBoot int64) bool {
	off := time.Duration(t - startBoot)
	return off >= f.From && (f.To == 0 || off < f.To)
}
