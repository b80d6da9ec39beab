package hostile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/klauspost/compress/zstd"

	"github.com/bpftape/bpftape/format"
)

// exhausting lists the forged captures that are small files made to
// exhaust a reader's memory or time: stack tables whose JSON grows when
// decoded, parts that a merge would index again and again, tables that a
// linear search per frame would scan, and more partitions than a
// partitioned export keeps open.
func exhausting() []Capture {
	return []Capture{
		{"stacks-bomb", "one stack table part of 85 M empty mappings ({} each: 3 bytes of JSON, 56 of memory)", writeStackBomb},
		{"stacks-parts", "8 stack table parts of 30 M empty mappings each", writeStackParts},
		{"stacks-merge", "a stack table part of 1 M mappings, then 3,000 batches of one row, each with an empty part", writeStackMerge},
		{"stacks-maps", "1 M mappings of one process, and 300 stacks of 1,024 frames that fall in them", writeStackMaps},
		{"stacks-kernel", "300,000 kernel objects, and 300 kernel stacks of 1,024 frames", writeStackKernel},
		{"partitions", "65 probes whose 20,000 events interleave, for a partitioned export", writePartitions},
	}
}

// stackPart encodes a stack table part's JSON as a capture stores it.
func stackPart(js []byte) (string, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return "", err
	}
	defer enc.Close()
	return base64.StdEncoding.EncodeToString(enc.EncodeAll(js, nil)), nil
}

// emptyMaps is a part's JSON with n empty mappings.
func emptyMaps(n int) []byte {
	var b bytes.Buffer
	b.Grow(3*n + 16)
	b.WriteString(`{"maps":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// writeParts writes req events with a user and a kernel stack field, rows
// of them a batch, batch i carrying parts[i]; event i has the user stack
// user(i) and the kernel stack kernel(i) (0 for none).
func writeParts(path string, parts []string, rows int, user, kernel func(i int) uint64) error {
	m := meta(format.Field{Name: "ustack", Type: format.UserStack}, format.Field{Name: "kstack", Type: format.KernelStack})
	return write(path, m, format.WriterOptions{}, func(w *format.Writer) error {
		i := 0
		for _, p := range parts {
			w.AddForgedStackPart(p)
			for r := 0; r < rows; r++ {
				e := &format.Event{Time: 2e9 + int64(i)*1e6, PID: 42, TID: 42, Comm: []byte("forged"), Probe: 0,
					Ints: []uint64{uint64(i), user(i), kernel(i)}, Strs: make([][]byte, 3)}
				if err := w.Append(e); err != nil {
					return err
				}
				i++
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeStackBomb(path string) error {
	// Just under the 256 MiB that one part's JSON may take.
	p, err := stackPart(emptyMaps(85 << 20))
	if err != nil {
		return err
	}
	return writeParts(path, []string{p}, 1, one, none)
}

func writeStackParts(path string) error {
	p, err := stackPart(emptyMaps(30 << 20))
	if err != nil {
		return err
	}
	parts := make([]string, 8)
	for i := range parts {
		parts[i] = p
	}
	return writeParts(path, parts, 1, one, none)
}

func writeStackMerge(path string) error {
	var b bytes.Buffer
	b.WriteString(`{"maps":[`)
	for i := 0; i < 1_000_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"pid":%d,"start":%d,"end":%d,"object":1}`, 1+i%1000, 4096*(i+1), 4096*(i+2))
	}
	b.WriteString("]}")
	big, err := stackPart(b.Bytes())
	if err != nil {
		return err
	}
	empty, err := stackPart([]byte(`{}`))
	if err != nil {
		return err
	}
	parts := []string{big}
	for i := 0; i < 3000; i++ {
		parts = append(parts, empty)
	}
	return writeParts(path, parts, 1, one, none)
}

func one(int) uint64  { return 1 }
func none(int) uint64 { return 0 }

// frameStacks appends n stacks of format.MaxFrames frames, the frame j of
// stack i at frame(i, j), to a part's JSON, and returns their ids.
func frameStacks(b *bytes.Buffer, n int, kernel bool, frame func(i, j int) uint64) []uint64 {
	ids := make([]uint64, n)
	frames := make([]uint64, format.MaxFrames)
	b.WriteString(`"stacks":[`)
	for i := 0; i < n; i++ {
		for j := range frames {
			frames[j] = frame(i, j)
		}
		ids[i] = format.StackID(kernel, frames)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, `{"id":%d,"kernel":%t,"frames":[`, ids[i], kernel)
		for j, f := range frames {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(f, 10))
		}
		b.WriteString("]}")
	}
	b.WriteString("]")
	return ids
}

func writeStackMaps(path string) error {
	const n = 1_000_000
	var b bytes.Buffer
	b.WriteString(`{"objects":[{"id":1,"path":"/bin/forged"}],"symbols":[{"object":1,"addr":0,"name":"f"}],"maps":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"pid":42,"start":%d,"end":%d,"object":1}`, 4096*(i+1), 4096*(i+2))
	}
	b.WriteString("],")
	x := uint64(88172645463325252)
	ids := frameStacks(&b, 300, false, func(i, j int) uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return 4096 * (1 + x%n)
	})
	b.WriteString("}")
	p, err := stackPart(b.Bytes())
	if err != nil {
		return err
	}
	return writeParts(path, []string{p}, 300, func(i int) uint64 { return ids[i] }, none)
}

func writeStackKernel(path string) error {
	const n = 300_000
	var b bytes.Buffer
	b.WriteString(`{"objects":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"path":"[m%d]","kernel":true}`, i+1, i)
	}
	b.WriteString(`],"symbols":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"object":%d,"addr":%d,"size":4096,"name":"k%d"}`, i+1, 0xffffffff80000000+4096*uint64(i), i)
	}
	b.WriteString("],")
	// Stacks that differ in their leaf only, so that the flame graph of
	// all of them is small while each frame is looked up.
	ids := frameStacks(&b, 300, true, func(i, j int) uint64 {
		if j == 0 {
			return 0xffffffff80000000 + 4096*uint64(i*997%n) + 16
		}
		return 0xffffffff80000000 + 4096*uint64(j*7919%n) + 16
	})
	b.WriteString("}")
	p, err := stackPart(b.Bytes())
	if err != nil {
		return err
	}
	return writeParts(path, []string{p}, 300, none, func(i int) uint64 { return ids[i] })
}

// writePartitions writes 20,000 events of 65 probes in turn.
func writePartitions(path string) error {
	m := meta()
	for i := 0; i < 63; i++ {
		m.Probes = append(m.Probes, format.Probe{Name: fmt.Sprintf("p%02d", i), Kind: "uprobe",
			Spec: fmt.Sprintf("p%02d=u:/bin/forged:p%02d(arg0)", i, i), Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}})
	}
	return write(path, m, format.WriterOptions{}, func(w *format.Writer) error {
		for i := 0; i < 20_000; i++ {
			p := uint16(i % len(m.Probes))
			e := &format.Event{Time: 2e9 + int64(i)*1000, PID: 42, TID: 42, Comm: []byte("forged"), Probe: p, Ints: []uint64{uint64(i)}}
			if p < 2 {
				e = event(e.Time, p, uint64(i))
			}
			if err := w.Append(e); err != nil {
				return err
			}
		}
		return nil
	})
}
