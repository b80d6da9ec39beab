package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// InfoResult is what info reports about a capture.
type InfoResult struct {
	File        string            `json:"file"`
	Meta        *format.Meta      `json:"meta"`
	Events      uint64            `json:"events"`
	PerProbe    map[string]uint64 `json:"events_per_probe"`
	FirstNs     int64             `json:"first_event_ns,omitempty"`
	LastNs      int64             `json:"last_event_ns,omitempty"`
	Losses      Losses            `json:"losses"`
	Batches     int               `json:"batches"`
	FileBytes   int64             `json:"file_bytes"`
	RawBytes    int64             `json:"uncompressed_bytes"`
	Ratio       float64           `json:"compression_ratio"`
	BytesPerEvt float64           `json:"bytes_per_event"`
	Recovered   bool              `json:"recovered"`
	RecoverNote string            `json:"recover_note,omitempty"`
	Captured    string            `json:"captured"`
}

// Info reads the whole capture and prints what it is and what it holds.
func Info(c *Capture, asJSON bool, out io.Writer) (*InfoResult, *Pass, error) {
	m := c.Meta()
	res := &InfoResult{File: c.Name, Meta: m, PerProbe: map[string]uint64{}}
	counts := make([]uint64, len(m.Probes))
	first, last := int64(0), int64(0)
	p, err := c.Scan(nil, func(b *format.Batch, i int) {
		counts[b.Probe[i]]++
		t := b.Time[i]
		if first == 0 || t < first {
			first = t
		}
		last = max(last, t)
	})
	if err != nil {
		return nil, p, err
	}
	for i, n := range counts {
		res.PerProbe[m.Probes[i].Name] = n
	}
	res.Events = p.Events
	res.FirstNs, res.LastNs = first, last
	res.Losses = p.Losses
	res.Batches = p.Batches
	res.FileBytes = c.Size()
	res.RawBytes = p.RawBytes
	if res.FileBytes > 0 {
		res.Ratio = float64(res.RawBytes) / float64(res.FileBytes)
	}
	if res.Events > 0 {
		res.BytesPerEvt = float64(res.FileBytes) / float64(res.Events)
	}
	res.Captured = Captured(m)
	res.Recovered = p.Recovered
	if p.RecoverErr != nil {
		res.RecoverNote = p.RecoverErr.Error()
	}
	if asJSON {
		return res, p, json.NewEncoder(out).Encode(res)
	}
	// Every string of the capture is escaped (package textsafe): the
	// metadata and probe table come from the file.
	w := func(k, f string, a ...any) {
		for i := range a {
			if s, ok := a[i].(string); ok {
				a[i] = textsafe.Escape(s)
			}
		}
		fmt.Fprintf(out, "%-13s "+f+"\n", append([]any{textsafe.Escape(k) + ":"}, a...)...)
	}
	w("file", "%s", c.Name)
	w("host", "%s", m.Host)
	w("kernel", "%s", m.Kernel)
	w("tool", "%s (capture format version %d)", m.Tool, m.SchemaVersion)
	fmt.Fprintf(out, "%-13s %s\n", "recorded by:", textsafe.ShellQuote(m.CommandLine)) // pasteable
	w("started", "%s", m.StartWall.Local().Format(time.RFC3339Nano))
	if win := m.Window; win != nil {
		if win.End >= win.Start && win.End != 0 {
			w("window", "%s to %s (%.3fs): every probe recording", offset(win.Start, m), offset(win.End, m), float64(win.End-win.Start)/1e9)
		} else {
			w("window", "from %s; its end is not recorded (a recorder killed before it finished the file, or a rotated part before the last)", offset(win.Start, m))
		}
	}
	if res.Events > 0 {
		w("events", "%d from %s to %s (%.3fs)", res.Events, offset(first, m), offset(last, m), float64(last-first)/1e9)
	} else {
		w("events", "0")
	}
	w("lost", "%d", res.Losses.Total)
	w("captured", "%s", res.Captured)
	w("file size", "%d bytes, %d batches, %s compression, %.1f bytes/event, %.1fx smaller than uncompressed Arrow (%d bytes)",
		res.FileBytes, res.Batches, m.Compression, res.BytesPerEvt, res.Ratio, res.RawBytes)
	if res.Recovered {
		note := "complete batches recovered from a file without footer"
		if res.RecoverNote != "" {
			note += "; dropped " + res.RecoverNote
		}
		w("recovered", "%s", note)
	}
	for _, k := range sortedKeys(m.Extra) {
		w(k, "%s", m.Extra[k])
	}
	width := len("PROBE")
	for _, p := range m.Probes {
		width = max(width, len(textsafe.Escape(p.Name)))
	}
	esc := textsafe.Escape
	fmt.Fprintf(out, "\n%-*s %-10s %10s %8s  %s\n", width, "PROBE", "KIND", "EVENTS", "LOST", "SPEC")
	for i, p := range m.Probes {
		fmt.Fprintf(out, "%-*s %-10s %10d %8d  %s\n", width, esc(p.Name), esc(p.Kind), counts[i], res.Losses.ByProbe[p.Name], esc(p.Spec))
		if p.Target != "" {
			bid := p.BuildID
			if bid == "" {
				bid = "none"
			}
			fmt.Fprintf(out, "%-*s target %s (build id %s)\n", width, "", esc(p.Target), esc(bid))
		}
		var fs []string
		for _, f := range p.Fields {
			fs = append(fs, esc(f.Name)+" "+f.Type.String())
		}
		if len(fs) > 0 {
			fmt.Fprintf(out, "%-*s fields %s\n", width, "", strings.Join(fs, ", "))
		}
	}
	return res, p, nil
}
