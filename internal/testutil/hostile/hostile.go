// Package hostile writes forged captures, one per class of hostile input
// that once crashed, misled or exhausted an analysis verb: extreme,
// negative and backward timestamps, loss counts that wrap a uint64, a
// corrupt compressed batch, thousands of host values, and small files
// made to exhaust memory or time (exhaust.go). They are valid
// Arrow IPC files as far as the format goes; what is hostile is their
// content. Tests run every verb on each (cmd/bpftape/hostile_test.go), and
// `go generate ./internal/testutil/hostile/` writes them to testdata/hostile for
// trying by hand.
package hostile

//go:generate go run ./gen ../../testdata/hostile

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/bpftape/bpftape/format"
)

// Capture is one forged capture.
type Capture struct {
	// Name is the file's base name without ".arrow".
	Name string
	// What it forges, for test messages.
	What string
	// Write writes it to path.
	Write func(path string) error
}

// Captures lists every forged capture. Each has an entry probe "req"
// (field arg0) and a return probe "req_ret" (field retval), so that
// latency, requests and compare have pairs to make of them.
func Captures() []Capture {
	return append([]Capture{
		{"times-extreme", "events at the smallest and largest int64 times, and at 0", func(p string) error {
			return writeTimes(p, []int64{1e9, math.MaxInt64, math.MinInt64, 0, 2e9, math.MaxInt64 - 1, math.MinInt64 + 1})
		}},
		{"times-negative", "every event before boot", func(p string) error {
			return writeTimes(p, []int64{-5e9, -4e9, -3e9, -2e9, -1})
		}},
		{"times-backward", "times that go back by up to 100 years", func(p string) error {
			return writeTimes(p, []int64{100 * 365 * 24 * 3600e9, 5e9, 4e9, 1e9, 3e9, 2e9})
		}},
		{"loss-wrap", "loss records of 2^64-1, 2^64-1 and 2 events, which wrap a uint64 sum to 0", writeLossWrap},
		{"corrupt-batch", "400 bytes flipped inside a zstd-compressed batch", writeCorrupt},
		{"many-hosts", "1000 distinct host values (more than MaxOpenParts, far fewer than the 3000 that took 645 MB)", writeManyHosts},
		{"injection", "command names, a string field, a probe name and the host that hold terminal escapes, forged lines, spreadsheet formulas and bytes that are not UTF-8", writeInjection},
		{"stacks-forged", "a stack table whose symbols hold terminal escapes, semicolons and huge sizes, mappings that run backwards or cover everything, an object id twice, stacks of MaxFrames frames, and stack ids the table lacks", writeStacks},
		{"bidi", "command names, a string field, the host, a probe name and stack symbols that hold bidirectional overrides, isolates, zero-width spaces and byte order marks", WriteBidi},
	}, exhausting()...)
}

// writeStacks writes req events with a user and a kernel stack whose table
// is forged.
func writeStacks(path string) error {
	m := meta(format.Field{Name: "ustack", Type: format.UserStack}, format.Field{Name: "kstack", Type: format.KernelStack})
	long := make([]uint64, format.MaxFrames)
	for i := range long {
		long[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	user := [][]uint64{{0x401000, 0x401010, 0}, long, {math.MaxUint64, 1}}
	kernel := []uint64{0xffffffff81000000, math.MaxUint64}
	t := &format.StackTable{
		Objects: []format.Object{{ID: 1, Path: Injections[0]}, {ID: 1, Path: "/bin/other"}, {ID: 2, Path: "[kernel]", Kernel: true}},
		Maps: []format.Mapping{
			{PID: 42, Start: 0x402000, End: 0x401000, Object: 1},
			{PID: 42, Start: 0, End: math.MaxUint64, Object: 1, Bias: 1 << 63},
			{PID: 42, Since: math.MinInt64, Start: 0x400000, End: 0x500000, Object: 77},
		},
		Processes: []format.ProcessNote{{PID: 42, Reason: Injections[1]}},
	}
	for i, s := range Injections {
		t.Symbols = append(t.Symbols, format.Symbol{Object: 1, Addr: 0x401000 + uint64(i), Size: math.MaxUint64, Name: s + ";semi"})
	}
	t.Symbols = append(t.Symbols, format.Symbol{Object: 2, Addr: 0, Size: math.MaxUint64, Name: "k;" + Injections[2]})
	for _, f := range user {
		t.Stacks = append(t.Stacks, format.Stack{ID: format.StackID(false, f), Frames: f})
	}
	kid := format.StackID(true, kernel)
	t.Stacks = append(t.Stacks, format.Stack{ID: kid, Kernel: true, Frames: kernel})
	return write(path, m, format.WriterOptions{}, func(w *format.Writer) error {
		w.AddStacks(t)
		for i := 0; i < 30; i++ {
			uid := format.StackID(false, user[i%len(user)])
			if i%7 == 6 {
				uid = 0xdeadbeef // not in the table
			}
			e := &format.Event{Time: 2e9 + int64(i)*1e6, PID: 42, TID: 42, Comm: []byte("forged"), Probe: 0, Ints: []uint64{uint64(i), uid, kid}, Strs: make([][]byte, 3)}
			if err := w.Append(e); err != nil {
				return err
			}
			r := &format.Event{Time: 2e9 + int64(i)*1e6 + 1000, PID: 42, TID: 42, Comm: []byte("forged"), Probe: 1, Ints: []uint64{uint64(i), 0, kid}, Strs: make([][]byte, 3)}
			if err := w.Append(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Injections are the strings writeInjection puts wherever a capture holds
// text.
var Injections = []string{"\x1b]0;pwned\a", "\nforged line", "=HYPERLINK(\"http://x\")", "+cmd|' /C calc'!A0", "bad\xffutf8", "@sum(1)"}

func writeInjection(path string) error {
	m := meta(format.Field{Name: "name", Type: format.String})
	m.Host = "host\x1b[2J"
	m.CommandLine = []string{"bpftape", "record", "-c", "\x1b]0;cmd\a"}
	m.Extra = map[string]string{"comm": "\nforged: extra"}
	m.Probes = append(m.Probes, format.Probe{Name: "evil\x1b[31m\nprobe", Kind: "uprobe", Spec: "\x1b]0;spec\a", Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}})
	return write(path, m, format.WriterOptions{}, func(w *format.Writer) error {
		for i, s := range Injections {
			for p := uint16(0); p < 2; p++ {
				e := event(2e9+int64(i)*1e6+int64(p)*1000, p, uint64(i), []byte(s))
				e.Comm = []byte(s)
				if err := w.Append(e); err != nil {
					return err
				}
			}
			if err := w.Append(&format.Event{Time: 2e9 + int64(i)*1e6 + 500, PID: 42, TID: 42, Comm: []byte(s), Probe: 2, Ints: []uint64{7}}); err != nil {
				return err
			}
		}
		return nil
	})
}

func meta(extra ...format.Field) *format.Meta {
	return &format.Meta{
		Tool: "bpftape hostile", Host: "forged", Kernel: "0.0",
		StartWall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), StartBoot: 1e9,
		Probes: []format.Probe{
			{Name: "req", Kind: "uprobe", Spec: "req=u:/bin/forged:req(arg0)", Fields: append([]format.Field{{Name: "arg0", Type: format.Uint64}}, extra...)},
			{Name: "req_ret", Kind: "uretprobe", Spec: "req_ret=ur:/bin/forged:req", Fields: append([]format.Field{{Name: "retval", Type: format.Int64}}, extra...)},
		},
	}
}

func event(t int64, probe uint16, v uint64, strs ...[]byte) *format.Event {
	return &format.Event{Time: t, CPU: 0, PID: 42, TID: 42, Comm: []byte("forged"), Probe: probe, Ints: []uint64{v, 0}, Strs: append([][]byte{nil}, strs...)}
}

// write writes the events of each to path with meta m.
func write(path string, m *format.Meta, opts format.WriterOptions, each func(w *format.Writer) error) error {
	w, err := format.Create(path, m, opts)
	if err != nil {
		return err
	}
	if err := each(w); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// writeTimes writes an entry and a return at each time: the return 1 µs
// after its entry, saturating at the largest time.
func writeTimes(path string, times []int64) error {
	return write(path, meta(), format.WriterOptions{}, func(w *format.Writer) error {
		for i, t := range times {
			ret := t + 1000
			if ret < t {
				ret = math.MaxInt64
			}
			if err := w.Append(event(t, 0, uint64(i+1)*512)); err != nil {
				return err
			}
			if err := w.Append(event(ret, 1, uint64(i+1)*512)); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeLossWrap(path string) error {
	return write(path, meta(), format.WriterOptions{}, func(w *format.Writer) error {
		for i := int64(0); i < 10; i++ {
			if err := w.Append(event(2e9+i*1e6, uint16(i%2), uint64(i))); err != nil {
				return err
			}
		}
		for _, n := range []uint64{math.MaxUint64, math.MaxUint64, 2} {
			if err := w.Lost(0, 0, 3e9, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeCorrupt writes 4 batches of varied values, then flips 400 bytes in
// the middle of the second batch's body.
func writeCorrupt(path string) error {
	err := write(path, meta(), format.WriterOptions{BatchRows: 4096}, func(w *format.Writer) error {
		x := uint64(88172645463325252)
		for i := int64(0); i < 4*4096; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			if err := w.Append(event(2e9+i*1000+int64(x%997), uint16(i%2), x%100000)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// The batches are equal in size: the second one's middle is at about
	// 3/8 of the file (schema and dictionary first, footer last).
	mid := len(b) * 3 / 8
	for i := mid; i < mid+400 && i < len(b); i++ {
		b[i] ^= 0x5a
	}
	return os.WriteFile(path, b, 0o600)
}

// writeManyHosts writes a merged-like capture whose probes carry a host
// field with 1000 distinct values.
func writeManyHosts(path string) error {
	m := meta(format.Field{Name: "host", Type: format.String})
	// A merged capture's: the host field is the merge's only with inputs.
	m.Inputs = []format.Meta{{Host: "host-0000"}, {Host: "host-0001"}}
	return write(path, m, format.WriterOptions{}, func(w *format.Writer) error {
		var host bytes.Buffer
		for i := 0; i < 1000; i++ {
			host.Reset()
			fmt.Fprintf(&host, "host-%04d", i)
			for p := uint16(0); p < 2; p++ {
				if err := w.Append(event(2e9+int64(i)*1e6+int64(p)*1000, p, uint64(i), host.Bytes())); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Named returns the forged capture called name; it panics on a name
// Captures does not list (a test's mistake).
func Named(name string) Capture {
	for _, c := range Captures() {
		if c.Name == name {
			return c
		}
	}
	panic("hostile: no capture " + name)
}

// BreakStackTable makes the stack table of the capture at path malformed,
// in place, the batches and their checksums left whole: every part of the
// table is base64 of a zstd frame, whose magic reads "KLUv/", and each
// becomes "%%%%%", which is not base64.
func BreakStackTable(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte("KLUv/")) {
		return fmt.Errorf("%s: no stack table part", path)
	}
	return os.WriteFile(path, bytes.ReplaceAll(b, []byte("KLUv/"), []byte("%%%%%")), 0o600)
}
