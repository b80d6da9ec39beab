// Package tracefs finds the tracefs mount and reads kernel tracepoint
// formats from it, so the recorder can turn "category:event" and field names
// into record offsets and sizes for the tracepoint program.
package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bpftape/bpftape/record/suggest"
)

// Mount points tried by Dir, in order.
const (
	TracingDir      = "/sys/kernel/tracing"
	DebugTracingDir = "/sys/kernel/debug/tracing"
)

// maxSuggestions is how many close names an error lists.
const maxSuggestions = 5

// Dir returns the tracefs mount: TracingDir if it has events/, else
// DebugTracingDir if it has, else tracefs freshly mounted on TracingDir
// (which needs root).
func Dir() (string, error) {
	if d, ok := Find(); ok {
		return d, nil
	}
	err := unix.Mount("nodev", TracingDir, "tracefs", 0, "")
	if err == nil && hasEvents(TracingDir) {
		return TracingDir, nil
	}
	if err == nil {
		err = errors.New("mounted, but it has no events/")
	}
	return "", fmt.Errorf("tracefs: no events/ in %s or %s, and mounting tracefs on %s: %w",
		TracingDir, DebugTracingDir, TracingDir, err)
}

// Find returns the tracefs mount Dir would use without mounting one:
// TracingDir or DebugTracingDir, whichever has events/ first. ok is false
// when neither has (Dir would then mount tracefs on TracingDir).
func Find() (dir string, ok bool) {
	for _, d := range []string{TracingDir, DebugTracingDir} {
		if hasEvents(d) {
			return d, true
		}
	}
	return "", false
}

func hasEvents(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "events"))
	return err == nil && st.IsDir()
}

// ReadFormat reads and parses dir/events/category/event/format. An unknown
// category or event is an error naming close existing ones.
func ReadFormat(dir, category, event string) (*Format, error) {
	if category == "" || event == "" || strings.ContainsAny(category+event, "/\x00") || category == ".." || event == ".." {
		return nil, fmt.Errorf("tracefs: bad tracepoint name %q", category+":"+event)
	}
	events := filepath.Join(dir, "events")
	catDir := filepath.Join(events, category)
	if st, err := os.Stat(catDir); err != nil || !st.IsDir() {
		cats, lerr := subdirs(events)
		if lerr != nil {
			return nil, fmt.Errorf("tracefs: %w", lerr)
		}
		hint := suggest.Hint(suggest.Closest(category, cats, maxSuggestions))
		if hint == "" {
			// Maybe the event exists in another category.
			hint = suggest.Hint(otherCategories(events, cats, event))
		}
		return nil, fmt.Errorf("tracefs: unknown tracepoint category %q (no %s)%s", category, catDir, hint)
	}
	file := filepath.Join(catDir, event, "format")
	text, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		evs, lerr := subdirs(catDir)
		if lerr != nil {
			return nil, fmt.Errorf("tracefs: %w", lerr)
		}
		sugg := suggest.Closest(event, evs, maxSuggestions)
		for i, s := range sugg {
			sugg[i] = category + ":" + s
		}
		if len(sugg) == 0 {
			cats, _ := subdirs(events)
			sugg = otherCategories(events, cats, event)
		}
		return nil, fmt.Errorf("tracefs: unknown tracepoint %s:%s (no %s)%s", category, event, file, suggest.Hint(sugg))
	}
	if err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	f, err := ParseFormat(string(text))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, file)
	}
	f.Category = category
	if f.Event != event {
		return nil, fmt.Errorf("tracefs: %s names event %q, not %q", file, f.Event, event)
	}
	return f, nil
}

// otherCategories returns "cat:event" for the categories in cats that have
// event.
func otherCategories(events string, cats []string, event string) []string {
	var out []string
	for _, c := range cats {
		if _, err := os.Stat(filepath.Join(events, c, event, "format")); err == nil {
			out = append(out, c+":"+event)
			if len(out) == maxSuggestions {
				break
			}
		}
	}
	return out
}

// subdirs lists the directories in dir, sorted.
func subdirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// List returns the sorted "category:event" names of the tracepoints under
// dir/events. Which of them a listing shows is record's policy (record.Filter).
func List(dir string) ([]string, error) {
	events := filepath.Join(dir, "events")
	cats, err := subdirs(events)
	if err != nil {
		return nil, fmt.Errorf("tracefs: listing tracepoints: %w", err)
	}
	var out []string
	for _, c := range cats {
		evs, err := subdirs(filepath.Join(events, c))
		if err != nil {
			return nil, fmt.Errorf("tracefs: listing tracepoints: %w", err)
		}
		for _, e := range evs {
			out = append(out, c+":"+e)
		}
	}
	sort.Strings(out)
	return out, nil
}

// SplitName splits "category:event" (or "category/event") into its parts.
func SplitName(name string) (category, event string, err error) {
	i := strings.IndexAny(name, ":/")
	if i <= 0 || i == len(name)-1 || strings.ContainsAny(name[i+1:], ":/") {
		return "", "", fmt.Errorf("tracefs: tracepoint %q is not category:event", name)
	}
	return name[:i], name[i+1:], nil
}
