package record

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/humanfmt"
)

// StatusInterval is how often the live status line is redrawn.
const StatusInterval = 250 * time.Millisecond

// startStatus redraws a one-line status on Options.Status until the
// returned function is called, which erases it.
func (r *recorder) startStatus() (stop func()) {
	out := r.opts.Status
	if out == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(StatusInterval)
		defer t.Stop()
		start := time.Now()
		var lastEvents uint64
		last := start
		rate := 0.0
		for {
			select {
			case <-done:
				fmt.Fprint(out, "\r\033[K")
				return
			case now := <-t.C:
				ev := r.w.Stats.Events.Load()
				if dt := now.Sub(last).Seconds(); dt > 0 {
					rate = float64(ev-lastEvents) / dt
				}
				lastEvents, last = ev, now
				fmt.Fprintf(out, "\r\033[Krecording %s  %s events  %s/s  %s written  %s lost",
					now.Sub(start).Truncate(100*time.Millisecond), count(ev), count(uint64(rate)),
					bytesStr(r.w.Stats.Bytes.Load()), count(r.w.Stats.Lost.Load()))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Print writes a summary in the manner of perf record's.
func (s *Summary) Print(w io.Writer) {
	rate := 0.0
	if secs := s.Elapsed.Seconds(); secs > 0 {
		rate = float64(s.Events) / secs
	}
	fmt.Fprintf(w, "[ bpftape record: %s events in %.3fs (%s/s), %s lost; stopped: %s ]\n",
		count(s.Events), s.Elapsed.Seconds(), count(uint64(rate)), count(s.Lost), s.Stopped)
	ratio := ""
	if s.Bytes > 0 && s.RawBytes > 0 && len(s.Parts) <= 1 {
		ratio = fmt.Sprintf(" (%.1fx smaller than the %s the events took as ring buffer samples)",
			float64(s.RawBytes)/float64(s.Bytes), bytesStr(s.RawBytes))
		if s.RawBytes < s.Bytes {
			ratio = fmt.Sprintf(" (the events took %s as ring buffer samples; the metadata and the columns' layout take the rest)", bytesStr(s.RawBytes))
		}
	}
	switch {
	case s.Output != "":
		fmt.Fprintf(w, "[ bpftape record: wrote %s to %s%s ]\n", bytesStr(s.Bytes), s.Output, ratio)
	case len(s.Snapshots) == 0:
		fmt.Fprintf(w, "[ bpftape record: flight recorder: no snapshot taken, nothing written ]\n")
	default:
		fmt.Fprintf(w, "[ bpftape record: flight recorder: wrote %s, %s: %s ]\n", plural(len(s.Snapshots), "snapshot"), bytesStr(s.Bytes), strings.Join(s.Snapshots, " "))
	}
	if s.SnapshotsSkipped > 0 {
		fmt.Fprintf(w, "[ bpftape record: WARNING: %s skipped while two were being written: the disk is slower than the triggers ]\n", plural(s.SnapshotsSkipped, "snapshot"))
	}
	if f := s.Flight; f.Batches > 0 || f.Dropped > 0 {
		fmt.Fprintf(w, "[ bpftape record: flight recorder: the ring held %s in %d batches at the end, and dropped %d older batches",
			bytesStr(f.Bytes), f.Batches, f.Dropped)
		if f.BySize > 0 {
			fmt.Fprintf(w, "; WARNING: %d of them were dropped for --flight-size before they left --flight: snapshots reach back less", f.BySize)
		}
		fmt.Fprintln(w, " ]")
	}
	if len(s.Parts) > 1 {
		fmt.Fprintf(w, "[ bpftape record: rotated, the newest %d files kept: %s ]\n", len(s.Parts), strings.Join(s.Parts, " "))
	}
	if len(s.EarlierRemoved) > 0 {
		fmt.Fprintf(w, "[ bpftape record: --force: removed %s of an earlier recording, which this one did not replace: %s ]\n",
			humanfmt.Plural(uint64(len(s.EarlierRemoved)), "part", "parts"), strings.Join(s.EarlierRemoved, " "))
	}
	if s.EarlierError != nil {
		fmt.Fprintf(w, "[ bpftape record: WARNING: parts of an earlier recording remain, which read as this one's later parts: %v ]\n", s.EarlierError)
	}
	if s.Lost > 0 {
		fmt.Fprintf(w, "[ bpftape record: WARNING: %s events were lost because the ring buffer was full: try a larger --ringbuf-size ]\n", count(s.Lost))
	}
	if s.ReadFaults > 0 || s.Truncated > 0 || s.Malformed > 0 {
		fmt.Fprintf(w, "[ bpftape record: %s events with unreadable values (recorded as 0 or \"\"), %s with strings cut to 63 bytes, %s malformed samples dropped ]\n",
			count(s.ReadFaults), count(s.Truncated), count(s.Malformed))
	}
	if s.NoComm > 0 {
		fmt.Fprintf(w, "[ bpftape record: %s events recorded without a comm (no comm record named their thread) ]\n", count(s.NoComm))
	}
	if s.Window.End > s.Window.Start && s.Window.Start > 0 {
		fmt.Fprintf(w, "[ bpftape record: every probe recorded for the same %.3fs window ]\n", float64(s.Window.End-s.Window.Start)/1e9)
	}
	if s.Followed > 0 {
		fmt.Fprintf(w, "[ bpftape record: followed %s processes ]\n", count(s.Followed))
	}
	if s.Untracked > 0 {
		fmt.Fprintf(w, "[ bpftape record: WARNING: %s child processes were not recorded: more than %d processes at once ]\n", count(s.Untracked), bpf.MaxTraced)
	}
	if s.SkippedReads > 0 {
		fmt.Fprintf(w, "[ bpftape record: WARNING: %d files were not read for symbols: they were slow to read, or the recording was ending (bpftape stacks says which) ]\n", s.SkippedReads)
	}
	nameW, kindW := len("probe"), len("kind")
	kinds := make([]string, len(s.Probes))
	for i, p := range s.Probes {
		kinds[i] = p.Kind
		if p.Sites > 1 {
			kinds[i] = fmt.Sprintf("%s (%d sites)", p.Kind, p.Sites)
		}
		nameW, kindW = max(nameW, len(p.Name)), max(kindW, len(kinds[i]))
	}
	fmt.Fprintf(w, "  %-*s  %-*s  %12s  %10s  %11s\n", nameW, "probe", kindW, "kind", "events", "lost", "bytes/event")
	for i, p := range s.Probes {
		fmt.Fprintf(w, "  %-*s  %-*s  %12d  %10d  %11d\n", nameW, p.Name, kindW, kinds[i], p.Events, p.Lost, p.SampleSize)
	}
	for _, p := range s.Probes {
		if p.Filter != "" {
			fmt.Fprintf(w, "[ bpftape record: %s kept only events where %s: %s more were filtered out in the kernel ]\n",
				p.Name, p.Filter, count(p.Filtered))
		}
		if p.MaxRate > 0 {
			fmt.Fprintf(w, "[ bpftape record: %s kept at most %s events/s (--max-rate): %s more were rate-limited in the kernel ]\n",
				p.Name, humanfmt.Rate(p.MaxRate), count(p.RateLimited))
		}
		if p.RecorderSwitches > 0 {
			fmt.Fprintf(w, "[ bpftape record: %s left out %s switches of the recorder's own (between its threads and the idle task) ]\n",
				p.Name, count(p.RecorderSwitches))
		}
	}
}

// count formats n with thousands separators.
func count(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func bytesStr(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// plural is "1 snapshot", "2 snapshots".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
