package symbolize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"sort"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// linear is the symbolizer as it was before the index: it scans every
// mapping of the process for each user frame and every kernel object for
// each kernel frame. It is the oracle that the index must agree with.
type linear struct {
	stacks map[uint64]*format.Stack
	maps   map[uint32][]format.Mapping // by pid, by Since
	objs   map[uint32]*linearObject
	kernel []*linearObject
	notes  map[uint32]string
}

type linearObject struct {
	format.Object
	syms []format.Symbol // by Addr
}

func newLinear(t *format.StackTable) *linear {
	s := &linear{stacks: map[uint64]*format.Stack{}, maps: map[uint32][]format.Mapping{},
		objs: map[uint32]*linearObject{}, notes: map[uint32]string{}}
	if t == nil {
		return s
	}
	for i := range t.Stacks {
		if _, ok := s.stacks[t.Stacks[i].ID]; !ok {
			s.stacks[t.Stacks[i].ID] = &t.Stacks[i]
		}
	}
	for _, o := range t.Objects {
		if _, ok := s.objs[o.ID]; !ok {
			ob := &linearObject{Object: o}
			s.objs[o.ID] = ob
			if o.Kernel {
				s.kernel = append(s.kernel, ob)
			}
		}
	}
	for _, sym := range t.Symbols {
		if o := s.objs[sym.Object]; o != nil {
			o.syms = append(o.syms, sym)
		}
	}
	for _, o := range s.objs {
		sort.SliceStable(o.syms, func(i, j int) bool { return o.syms[i].Addr < o.syms[j].Addr })
	}
	for _, m := range t.Maps {
		if m.End > m.Start {
			s.maps[m.PID] = append(s.maps[m.PID], m)
		}
	}
	for pid, ms := range s.maps {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Since < ms[j].Since })
		s.maps[pid] = ms
	}
	for _, n := range t.Processes {
		s.notes[n.PID] = n.Reason
	}
	return s
}

func (s *linear) Frames(pid uint32, t int64, id uint64) (frames []Frame, ok bool) {
	st := s.stacks[id]
	if st == nil {
		return nil, false
	}
	frames = make([]Frame, len(st.Frames))
	for i, a := range st.Frames {
		look := a
		if i > 0 && a > 0 {
			look = a - 1
		}
		f := s.Frame(pid, t, look, st.Kernel)
		if f.Addr != a {
			f.Offset += a - look
			f.Addr = a
			if !f.Resolved {
				f.Name = linearUnresolvedName(f)
			}
		}
		frames[i] = f
	}
	return frames, true
}

func (s *linear) Frame(pid uint32, t int64, addr uint64, kernel bool) Frame {
	f := Frame{Addr: addr, Kernel: kernel}
	if kernel {
		for _, o := range s.kernel {
			if sym, ok := o.lookup(addr); ok {
				f.Name, f.Object, f.Offset, f.Resolved, f.BuildID = sym.Name, o.Path, addr-sym.Addr, true, o.BuildID
				return f
			}
		}
		f.Name = linearUnresolvedName(f)
		f.Reason = "no kernel symbol covers it"
		return f
	}
	m, ok := s.mapping(pid, t, addr)
	if !ok {
		f.Name = fmt.Sprintf("[%#x]", addr)
		switch r := s.notes[pid]; {
		case r != "":
			f.Reason = fmt.Sprintf("process %d %s", pid, r)
		case len(s.maps[pid]) == 0:
			f.Reason = fmt.Sprintf("the capture has no mappings of process %d", pid)
		default:
			f.Reason = fmt.Sprintf("no mapping of process %d covers it: not a code address (code built without frame pointers breaks the walk)", pid)
		}
		return f
	}
	o := s.objs[m.Object]
	if o == nil {
		f.Name = fmt.Sprintf("[%#x]", addr)
		f.Reason = fmt.Sprintf("its mapping names object %d, which the capture lacks", m.Object)
		return f
	}
	f.Object, f.Map, f.BuildID = o.Path, &m, o.BuildID
	objAddr := addr - m.Bias
	if sym, ok := o.lookup(objAddr); ok {
		f.Name, f.Offset, f.Resolved = sym.Name, objAddr-sym.Addr, true
		return f
	}
	f.Offset = addr - m.Start + m.Offset
	f.Name = linearUnresolvedName(f)
	if o.NoSymbols != "" {
		f.Reason = fmt.Sprintf("%s has no symbols: %s", o.Path, o.NoSymbols)
	} else {
		f.Reason = fmt.Sprintf("no symbol of %s covers it", o.Path)
	}
	return f
}

// sameFrame compares two frames, their mappings by value.
func sameFrame(a, b Frame) bool {
	am, bm := a.Map, b.Map
	a.Map, b.Map = nil, nil
	return a == b && (am == nil) == (bm == nil) && (am == nil || *am == *bm)
}

func linearUnresolvedName(f Frame) string {
	if f.Object == "" {
		return fmt.Sprintf("[%#x]", f.Addr)
	}
	return fmt.Sprintf("[%s+%#x]", path.Base(f.Object), f.Offset)
}

func (s *linear) mapping(pid uint32, t int64, addr uint64) (format.Mapping, bool) {
	var best format.Mapping
	found := false
	for _, m := range s.maps[pid] {
		if addr < m.Start || addr >= m.End {
			continue
		}
		if !found || m.Since <= t {
			best, found = m, true
		}
		if m.Since > t {
			break
		}
	}
	return best, found
}

func (o *linearObject) lookup(addr uint64) (format.Symbol, bool) {
	i := sort.Search(len(o.syms), func(i int) bool { return o.syms[i].Addr > addr }) - 1
	if i < 0 {
		return format.Symbol{}, false
	}
	sym := o.syms[i]
	if sym.Size == 0 || addr-sym.Addr < sym.Size {
		return sym, true
	}
	return format.Symbol{}, false
}

// wellFormed is a table as the recorder writes one: processes whose
// mappings were read several times (the layout changing between reads, as
// after an exec or a dlopen), each read without overlaps; objects with
// sized and size 0 symbols, stripped ones, one the table lacks; the kernel
// and modules at their own addresses.
func wellFormed(rng *rand.Rand) *format.StackTable {
	t := &format.StackTable{}
	const nobj = 6
	for id := uint32(1); id <= nobj; id++ {
		o := format.Object{ID: id, Path: fmt.Sprintf("/usr/lib/lib%d.so", id), BuildID: fmt.Sprint(id)}
		if id == nobj {
			o.NoSymbols = "stripped"
		} else {
			addSymbols(t, rng, id, 0x1000, 0x20+rng.IntN(40))
		}
		t.Objects = append(t.Objects, o)
	}
	// The kernel, then modules above it, each at its own addresses.
	t.Objects = append(t.Objects, format.Object{ID: 100, Path: "[kernel]", Kernel: true})
	addSymbols(t, rng, 100, 0xffffffff81000000, 200)
	for j := uint32(0); j < 4; j++ {
		id := 101 + j
		t.Objects = append(t.Objects, format.Object{ID: id, Path: fmt.Sprintf("[mod%d]", j), Kernel: true})
		addSymbols(t, rng, id, 0xffffffffc0000000+uint64(j)<<24, 1+rng.IntN(30))
	}
	rng.Shuffle(len(t.Symbols), func(i, j int) { t.Symbols[i], t.Symbols[j] = t.Symbols[j], t.Symbols[i] })
	for pid := uint32(1); pid <= 5; pid++ {
		since := int64(rng.IntN(100))
		for read := 0; read < 1+rng.IntN(4); read++ {
			at := uint64(0x400000)
			for k := 0; k < 1+rng.IntN(12); k++ {
				at += uint64(rng.IntN(4)) * 0x1000 // a gap, or none
				size := uint64(1+rng.IntN(8)) * 0x1000
				obj := uint32(1 + rng.IntN(nobj))
				if rng.IntN(20) == 0 {
					obj = 99 // not in the table
				}
				fileOff := uint64(rng.IntN(4)) * 0x1000
				t.Maps = append(t.Maps, format.Mapping{PID: pid, Since: since, Start: at, End: at + size,
					Offset: fileOff, Object: obj, Bias: at - fileOff})
				at += size
			}
			since += 1 + int64(rng.IntN(1000))
		}
	}
	rng.Shuffle(len(t.Maps), func(i, j int) { t.Maps[i], t.Maps[j] = t.Maps[j], t.Maps[i] })
	t.Processes = []format.ProcessNote{{PID: 6, Reason: "exited before its mappings were read"}}
	return t
}

// addSymbols adds n symbols of object id from base up, each sized to at
// most the next one or of size 0.
func addSymbols(t *format.StackTable, rng *rand.Rand, id uint32, base uint64, n int) {
	at := base
	for i := 0; i < n; i++ {
		at += uint64(rng.IntN(3)) * 0x10
		gap := uint64(1+rng.IntN(16)) * 0x10
		size := uint64(0)
		if rng.IntN(3) > 0 {
			size = 1 + uint64(rng.IntN(int(gap)))
		}
		t.Symbols = append(t.Symbols, format.Symbol{Object: id, Addr: at, Size: size, Name: fmt.Sprintf("o%d_f%d", id, i)})
		at += gap
	}
}

// hostile is a table that contradicts itself at random over a small
// address space: mappings that overlap, run backwards, repeat or cover
// everything, read at repeated times; objects with one id; symbols that
// repeat, overlap and have huge sizes; kernel objects that overlap.
func hostile(rng *rand.Rand) *format.StackTable {
	t := &format.StackTable{}
	addr := func() uint64 {
		switch rng.IntN(10) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64
		case 2:
			return math.MaxUint64 - uint64(rng.IntN(4))
		}
		return uint64(rng.IntN(64))
	}
	size := func() uint64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64
		case 2:
			return math.MaxUint64 - uint64(rng.IntN(4))
		}
		return uint64(rng.IntN(16))
	}
	for i := 0; i < 12; i++ {
		t.Objects = append(t.Objects, format.Object{ID: uint32(1 + rng.IntN(8)), Path: fmt.Sprintf("/o%d", i), Kernel: rng.IntN(2) == 0})
	}
	for i := 0; i < 40; i++ {
		t.Symbols = append(t.Symbols, format.Symbol{Object: uint32(1 + rng.IntN(9)), Addr: addr(), Size: size(), Name: fmt.Sprintf("s%d", i)})
	}
	for i := 0; i < 40; i++ {
		m := format.Mapping{PID: uint32(1 + rng.IntN(3)), Since: int64(rng.IntN(6)), Start: addr(), End: addr(),
			Offset: addr(), Object: uint32(1 + rng.IntN(9)), Bias: addr()}
		if rng.IntN(8) == 0 {
			m.Start, m.End = 0, math.MaxUint64
		}
		t.Maps = append(t.Maps, m)
		if rng.IntN(5) == 0 {
			t.Maps = append(t.Maps, m) // repeated
		}
	}
	return t
}

// probes returns the addresses worth asking about in t: every boundary
// of a mapping or of a symbol (as it is, and as mapped by a few mappings),
// either side of it, and the extremes.
func probes(t *format.StackTable, rng *rand.Rand) []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	add := func(as ...uint64) {
		for _, a := range as {
			for _, d := range []uint64{0, 1, math.MaxUint64} { // a, a+1, a-1
				if x := a + d; !seen[x] {
					seen[x] = true
					out = append(out, x)
				}
			}
		}
	}
	add(0, math.MaxUint64)
	for _, m := range t.Maps {
		add(m.Start, m.End)
	}
	for _, s := range t.Symbols {
		add(s.Addr, s.Addr+s.Size)
		for i := 0; i < 3 && len(t.Maps) > 0; i++ {
			m := t.Maps[rng.IntN(len(t.Maps))]
			add(s.Addr+m.Bias, s.Addr+s.Size+m.Bias)
		}
	}
	return out
}

// times returns the times worth asking about in t: every Since, either
// side of it, and the extremes.
func times(t *format.StackTable) []int64 {
	out := []int64{math.MinInt64, math.MaxInt64}
	for _, m := range t.Maps {
		out = append(out, m.Since-1, m.Since, m.Since+1)
	}
	return out
}

// checkSame asks s and the oracle about every probe address of every
// process at every time of interest, and about stacks of those addresses.
func checkSame(t *testing.T, tab *format.StackTable, rng *rand.Rand) {
	t.Helper()
	s, o := New(tab), newLinear(tab)
	addrs, ts := probes(tab, rng), times(tab)
	rng.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	addrs, ts = addrs[:min(len(addrs), 200)], ts[:min(len(ts), 10)]
	pids := []uint32{0}
	seen := map[uint32]bool{0: true}
	for _, m := range tab.Maps {
		if !seen[m.PID] {
			seen[m.PID] = true
			pids = append(pids, m.PID)
		}
	}
	for _, p := range tab.Processes {
		if !seen[p.PID] {
			seen[p.PID] = true
			pids = append(pids, p.PID)
		}
	}
	for _, a := range addrs {
		if got, want := s.Frame(0, 0, a, true), o.Frame(0, 0, a, true); !sameFrame(got, want) {
			t.Fatalf("kernel %#x: got %+v, want %+v", a, got, want)
		}
	}
	for _, pid := range pids {
		for _, tm := range ts {
			for _, a := range addrs {
				if got, want := s.Frame(pid, tm, a, false), o.Frame(pid, tm, a, false); !sameFrame(got, want) {
					t.Fatalf("pid %d at %d, %#x: got %+v, want %+v", pid, tm, a, got, want)
				}
			}
		}
	}
	// Stacks, whose return addresses are looked up a byte earlier.
	for i := 0; i < 20; i++ {
		frames := make([]uint64, 1+rng.IntN(8))
		for j := range frames {
			frames[j] = addrs[rng.IntN(len(addrs))]
		}
		kernel := i%2 == 0
		id := format.StackID(kernel, frames)
		tab.Stacks = append(tab.Stacks, format.Stack{ID: id, Kernel: kernel, Frames: frames})
	}
	s, o = New(tab), newLinear(tab)
	for _, st := range tab.Stacks {
		for _, pid := range pids {
			tm := ts[rng.IntN(len(ts))]
			got, gok := s.Frames(pid, tm, st.ID)
			want, wok := o.Frames(pid, tm, st.ID)
			if gok != wok || len(got) != len(want) {
				t.Fatalf("stack %#x: got %v %d frames, want %v %d", st.ID, gok, len(got), wok, len(want))
			}
			for j := range got {
				if !sameFrame(got[j], want[j]) {
					t.Fatalf("stack %#x pid %d at %d, frame %d: got %+v, want %+v", st.ID, pid, tm, j, got[j], want[j])
				}
			}
		}
	}
}

// TestSameAsLinear: on tables as the recorder writes them, the index
// names every frame exactly as a scan of every mapping and object did.
func TestSameAsLinear(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		checkSame(t, wellFormed(rng), rng)
	}
	checkSame(t, table(), rand.New(rand.NewPCG(0, 2)))
}

// TestSameAsLinearHostile: on tables that contradict themselves, the
// index still agrees with the scan, ties between mappings read at one
// time going to the later in the table as they did.
func TestSameAsLinearHostile(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		checkSame(t, hostile(rng), rng)
	}
}

// Hostile tables at scale: the shapes that made a scan per frame time out,
// and the overlaps that would defeat a plain sorted search.

// mapsDisjoint is n mappings of pid 42, one page each, side by side, and
// stacks of frames that fall in them at random.
func mapsDisjoint(n, stacks int) *format.StackTable {
	t := &format.StackTable{Objects: []format.Object{{ID: 1, Path: "/bin/forged"}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0, Name: "f"}}}
	t.Maps = make([]format.Mapping, n)
	for i := range t.Maps {
		t.Maps[i] = format.Mapping{PID: 42, Start: 4096 * uint64(i+1), End: 4096 * uint64(i+2), Object: 1}
	}
	x := uint64(88172645463325252)
	addStacks(t, stacks, false, func(i, j int) uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return 4096 * (1 + x%uint64(n))
	})
	return t
}

// mapsCovering is n mappings of pid 42 that all cover every address, each
// read at its own time, of objects 1 to 4.
func mapsCovering(n, stacks int) *format.StackTable {
	t := &format.StackTable{}
	for id := uint32(1); id <= 4; id++ {
		t.Objects = append(t.Objects, format.Object{ID: id, Path: fmt.Sprintf("/bin/o%d", id)})
		t.Symbols = append(t.Symbols, format.Symbol{Object: id, Addr: 0, Name: fmt.Sprintf("f%d", id)})
	}
	t.Maps = make([]format.Mapping, n)
	for i := range t.Maps {
		t.Maps[i] = format.Mapping{PID: 42, Since: int64(n - i), Start: 0, End: math.MaxUint64, Object: uint32(1 + i%4)}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	addStacks(t, stacks, false, func(i, j int) uint64 { return rng.Uint64() })
	return t
}

// mapsNested is n mappings of pid 42 nested in one another, read at
// random times.
func mapsNested(n, stacks int) *format.StackTable {
	t := &format.StackTable{Objects: []format.Object{{ID: 1, Path: "/bin/forged"}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0, Name: "f"}}}
	rng := rand.New(rand.NewPCG(2, 2))
	t.Maps = make([]format.Mapping, n)
	for i := range t.Maps {
		t.Maps[i] = format.Mapping{PID: 42, Since: rng.Int64N(int64(n)), Start: 4096 * uint64(i), End: 4096 * uint64(2*n-i), Object: 1}
	}
	addStacks(t, stacks, false, func(i, j int) uint64 { return rng.Uint64N(4096 * 2 * uint64(n)) })
	return t
}

// mapsRandom is n mappings of pid 42 with random ends, read at random
// times: the most nodes a mapping is listed at.
func mapsRandom(n, stacks int) *format.StackTable {
	t := &format.StackTable{Objects: []format.Object{{ID: 1, Path: "/bin/forged"}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0, Name: "f"}}}
	rng := rand.New(rand.NewPCG(3, 3))
	t.Maps = make([]format.Mapping, n)
	for i := range t.Maps {
		a, b := rng.Uint64N(1<<40), rng.Uint64N(1<<40)
		t.Maps[i] = format.Mapping{PID: 42, Since: rng.Int64N(int64(n)), Start: min(a, b), End: max(a, b) + 1, Object: 1}
	}
	addStacks(t, stacks, false, func(i, j int) uint64 { return rng.Uint64N(1 << 40) })
	return t
}

// mapsProcesses is n processes of one mapping each, all at one place.
func mapsProcesses(n, stacks int) *format.StackTable {
	t := &format.StackTable{Objects: []format.Object{{ID: 1, Path: "/bin/forged"}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0, Size: 4096, Name: "f"}}}
	t.Maps = make([]format.Mapping, n)
	for i := range t.Maps {
		t.Maps[i] = format.Mapping{PID: uint32(n - i), Start: 4096, End: 8192, Object: 1, Bias: 4096}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	addStacks(t, stacks, false, func(i, j int) uint64 { return rng.Uint64N(3 * 4096) })
	return t
}

// kernelObjects is n kernel objects of one 4 KiB symbol each, side by
// side, and kernel stacks of frames in them.
func kernelObjects(n, stacks int) *format.StackTable {
	t := &format.StackTable{}
	t.Objects = make([]format.Object, n)
	t.Symbols = make([]format.Symbol, n)
	for i := range t.Objects {
		t.Objects[i] = format.Object{ID: uint32(i + 1), Path: fmt.Sprintf("[m%d]", i), Kernel: true}
		t.Symbols[i] = format.Symbol{Object: uint32(i + 1), Addr: 0xffffffff80000000 + 4096*uint64(i), Size: 4096, Name: fmt.Sprintf("k%d", i)}
	}
	addStacks(t, stacks, true, func(i, j int) uint64 {
		return 0xffffffff80000000 + 4096*uint64((i*1024+j)*7919%n) + 16
	})
	return t
}

// kernelCovering is n kernel objects each with a size 0 symbol at a
// random address, which then covers every address above it: every
// object's symbol covers the top of the address space.
func kernelCovering(n, stacks int) *format.StackTable {
	t := &format.StackTable{}
	rng := rand.New(rand.NewPCG(4, 4))
	t.Objects = make([]format.Object, n)
	t.Symbols = make([]format.Symbol, n)
	for i := range t.Objects {
		t.Objects[i] = format.Object{ID: uint32(i + 1), Path: fmt.Sprintf("[m%d]", i), Kernel: true}
		t.Symbols[i] = format.Symbol{Object: uint32(i + 1), Addr: rng.Uint64(), Name: fmt.Sprintf("k%d", i)}
	}
	addStacks(t, stacks, true, func(i, j int) uint64 { return rng.Uint64() })
	return t
}

// addStacks adds n stacks of format.MaxFrames frames, frame j of stack i
// at frame(i, j).
func addStacks(t *format.StackTable, n int, kernel bool, frame func(i, j int) uint64) {
	for i := 0; i < n; i++ {
		frames := make([]uint64, format.MaxFrames)
		for j := range frames {
			frames[j] = frame(i, j)
		}
		t.Stacks = append(t.Stacks, format.Stack{ID: format.StackID(kernel, frames), Kernel: kernel, Frames: frames})
	}
}

// shapes are the hostile tables, with their size in the benchmarks.
var shapes = []struct {
	name string
	n    int
	make func(n, stacks int) *format.StackTable
}{
	{"maps-disjoint", 1_000_000, mapsDisjoint},
	{"maps-covering", 1_000_000, mapsCovering},
	{"maps-nested", 1_000_000, mapsNested},
	{"maps-random", 1_000_000, mapsRandom},
	{"maps-processes", 1_000_000, mapsProcesses},
	{"kernel-objects", 300_000, kernelObjects},
	{"kernel-covering", 300_000, kernelCovering},
}

// TestHostileScale symbolizes every hostile shape at a tenth of the size
// that made a scan per frame time out, and checks frames against the
// oracle.
func TestHostileScale(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			tab := sh.make(sh.n/10, 20)
			s, o := New(tab), newLinear(tab)
			when := int64(sh.n / 20)
			resolved := 0
			for i, st := range tab.Stacks {
				fs, ok := s.Frames(42, when, st.ID)
				if !ok || len(fs) != format.MaxFrames {
					t.Fatalf("stack %d: %v, %d frames", i, ok, len(fs))
				}
				for j, f := range fs {
					if f.Resolved {
						resolved++
					}
					if j%64 == 0 {
						look := f.Addr
						if j > 0 && look > 0 {
							look--
						}
						want := o.Frame(42, when, look, st.Kernel)
						if want.Addr != f.Addr {
							want.Offset += f.Addr - look
							want.Addr = f.Addr
							if !want.Resolved {
								want.Name = linearUnresolvedName(want)
							}
						}
						if !sameFrame(f, want) {
							t.Fatalf("stack %d frame %d: got %+v, want %+v", i, j, f, want)
						}
					}
				}
			}
			if resolved == 0 {
				t.Error("no frame resolved")
			}
		})
	}
}

// BenchmarkHostile symbolizes 300 stacks of 1,024 frames of each hostile
// shape at full size, as bpftape stacks does; the table is indexed once,
// outside the timing (BenchmarkHostileNew times that).
func BenchmarkHostile(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			tab := sh.make(sh.n, 300)
			s := New(tab)
			when := int64(sh.n / 2)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, st := range tab.Stacks {
					s.Frames(42, when, st.ID)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tab.Stacks)*format.MaxFrames), "ns/frame")
		})
	}
}

// BenchmarkHostileNew indexes each hostile shape at full size.
func BenchmarkHostileNew(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			tab := sh.make(sh.n, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				New(tab)
			}
		})
	}
}

// BenchmarkHostileLinear is BenchmarkHostile for the scan the index
// replaced, one stack an iteration (300 would take minutes): multiply
// ns/frame by 307,200 for the 300 stacks.
func BenchmarkHostileLinear(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			tab := sh.make(sh.n, 1)
			s := newLinear(tab)
			when := int64(sh.n / 2)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Frames(42, when, tab.Stacks[0].ID)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*format.MaxFrames), "ns/frame")
		})
	}
}

// BenchmarkWellFormed symbolizes stacks of a table as the recorder
// writes one, of frames that resolve, with the index and with the scan.
func BenchmarkWellFormed(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	tab := wellFormed(rng)
	s := New(tab)
	var userAddrs, kernelAddrs []uint64
	for _, a := range probes(tab, rng) {
		if s.Frame(3, 500, a, false).Resolved {
			userAddrs = append(userAddrs, a)
		}
		if s.Frame(3, 500, a, true).Resolved {
			kernelAddrs = append(kernelAddrs, a)
		}
	}
	for i := 0; i < 300; i++ {
		kernel, addrs := i%4 == 0, userAddrs
		if kernel {
			addrs = kernelAddrs
		}
		frames := make([]uint64, 32)
		for j := range frames {
			frames[j] = addrs[rng.IntN(len(addrs))]
		}
		tab.Stacks = append(tab.Stacks, format.Stack{ID: format.StackID(kernel, frames), Kernel: kernel, Frames: frames})
	}
	type frameser interface {
		Frames(pid uint32, t int64, id uint64) ([]Frame, bool)
	}
	for _, impl := range []struct {
		name string
		s    frameser
	}{{"index", New(tab)}, {"linear", newLinear(tab)}} {
		b.Run(impl.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for _, st := range tab.Stacks {
					impl.s.Frames(3, 500, st.ID)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tab.Stacks)*32), "ns/frame")
		})
	}
}

// TestTimeless checks Timeless against what it promises: where it holds,
// a user frame reads the same at every time (the earliest, between reads,
// the latest), on tables as the recorder writes them and hostile ones;
// and that both answers occur, a process read once being timeless and one
// that exec'd (its table read twice, the same addresses mapped anew) not.
func TestTimeless(t *testing.T) {
	seen := map[bool]int{}
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		var tab *format.StackTable
		if seed%2 == 0 {
			tab = wellFormed(rng)
		} else {
			tab = hostile(rng)
		}
		if seed%3 == 0 {
			// Every process's first read only: no exec, no overlap.
			first := map[uint32]int64{}
			for _, m := range tab.Maps {
				if f, ok := first[m.PID]; !ok || m.Since < f {
					first[m.PID] = m.Since
				}
			}
			maps := tab.Maps[:0]
			for _, m := range tab.Maps {
				if m.Since == first[m.PID] {
					maps = append(maps, m)
				}
			}
			tab.Maps = maps
		}
		s := New(tab)
		seen[s.Timeless()]++
		if !s.Timeless() {
			continue
		}
		times := []int64{math.MinInt64, 0}
		for _, m := range tab.Maps {
			times = append(times, m.Since-1, m.Since, m.Since+1)
		}
		times = append(times, math.MaxInt64)
		for _, m := range tab.Maps {
			for _, addr := range []uint64{m.Start, m.End - 1, m.Start + (m.End-m.Start)/2, m.End} {
				want := s.Frame(m.PID, times[0], addr, false)
				for _, at := range times[1:] {
					if got := s.Frame(m.PID, at, addr, false); got != want {
						t.Fatalf("seed %d: timeless, but pid %d's frame %#x reads %+v at %d and %+v at %d", seed, m.PID, addr, got, at, want, times[0])
					}
				}
			}
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("timeless %d tables, not %d: want both", seen[true], seen[false])
	}
	if New(table()).Timeless() {
		t.Error("a process that exec'd (the same addresses mapped anew) is timeless")
	}
}
