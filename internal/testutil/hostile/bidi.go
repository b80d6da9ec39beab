package hostile

import "github.com/bpftape/bpftape/format"

// Bidi holds the invisible format characters WriteBidi puts wherever a
// capture holds text: the bidirectional override U+202E (RIGHT-TO-LEFT
// OVERRIDE) and isolate U+2066 (LEFT-TO-RIGHT ISOLATE), the zero-width
// space U+200B and the byte order mark U+FEFF. A traced process can name
// its threads with them (prctl(PR_SET_NAME)): shown raw, "\u202egnp.exe"
// reads as "exe.png", and a zero-width space makes two names look alike.
var Bidi = []rune{0x202e, 0x2066, 0x200b, 0xfeff}

// BidiStrings are the strings WriteBidi writes: command names of at most
// 15 bytes, as the kernel keeps them, the last with all of Bidi.
var BidiStrings = []string{
	"\u202egnp.exe\u200b",
	"\u2066sshd\ufeff",
	"a\u202e\u2066\u200b\ufeff",
}

// WriteBidi writes a capture whose command names, string field "name",
// host, a probe's name, and user and kernel stack symbols (and an object's
// path) hold the format characters of Bidi. Its req and req_ret probes
// (fields arg0 and retval, then name, ustack and kstack) pair on thread
// 42, so that every analysis verb has something to show of it.
func WriteBidi(path string) error {
	m := meta(format.Field{Name: "name", Type: format.String},
		format.Field{Name: "ustack", Type: format.UserStack},
		format.Field{Name: "kstack", Type: format.KernelStack})
	m.Host = "host\u202e\u2066\u200b\ufeff"
	m.Extra = map[string]string{"comm": BidiStrings[0]}
	m.Probes = append(m.Probes, format.Probe{Name: "bidi\u202e\u2066\u200b\ufeff", Kind: "uprobe",
		Spec: "bidi\u202e=u:/bin/forged:bidi", Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}})

	// One user stack per string, of two frames in /bin/forged, and one
	// kernel stack; every symbol's name holds the characters.
	t := &format.StackTable{
		Objects: []format.Object{{ID: 1, Path: "/bin/forged\u202e\u2066\u200b\ufeff"}, {ID: 2, Path: "[kernel]", Kernel: true}},
		Maps:    []format.Mapping{{PID: 42, Start: 0x400000, End: 0x500000, Offset: 0, Object: 1}},
	}
	var user [][]uint64
	for i, s := range BidiStrings {
		leaf, caller := 0x401000+uint64(i)*0x100, 0x402000+uint64(i)*0x100
		t.Symbols = append(t.Symbols,
			format.Symbol{Object: 1, Addr: leaf, Size: 0x100, Name: "leaf_" + s},
			format.Symbol{Object: 1, Addr: caller, Size: 0x100, Name: "main\u200b" + s})
		user = append(user, []uint64{leaf + 0x10, caller + 0x20})
	}
	kernel := []uint64{0xffffffff81000010, 0xffffffff81001010}
	t.Symbols = append(t.Symbols,
		format.Symbol{Object: 2, Addr: 0xffffffff81000000, Size: 0x1000, Name: "vfs_\u202edaer"},
		format.Symbol{Object: 2, Addr: 0xffffffff81001000, Size: 0x1000, Name: "ksys\u2066\u200b\ufeff"})
	for _, f := range user {
		t.Stacks = append(t.Stacks, format.Stack{ID: format.StackID(false, f), Frames: f})
	}
	kid := format.StackID(true, kernel)
	t.Stacks = append(t.Stacks, format.Stack{ID: kid, Kernel: true, Frames: kernel})

	return write(path, m, format.WriterOptions{}, func(w *format.Writer) error {
		w.AddStacks(t)
		for i := range 30 {
			s := []byte(BidiStrings[i%len(BidiStrings)])
			uid := format.StackID(false, user[i%len(user)])
			at := 2e9 + int64(i)*1e6
			for p := range uint16(2) {
				e := &format.Event{Time: at + int64(p)*1000, PID: 42, TID: 42, Comm: s, Probe: p,
					Ints: []uint64{uint64(i+1) * 100, 0, uid, kid}, Strs: [][]byte{nil, s, nil, nil}}
				if err := w.Append(e); err != nil {
					return err
				}
			}
			e := &format.Event{Time: at + 500, PID: 42, TID: 42, Comm: s, Probe: 2, Ints: []uint64{7}}
			if err := w.Append(e); err != nil {
				return err
			}
		}
		return nil
	})
}
