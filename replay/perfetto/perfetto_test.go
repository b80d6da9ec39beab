package perfetto

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

const base = int64(5_000_000_000)

// A user stack of pid 10, innermost frame first as the recorder stores
// it, and the frames `bpftape stacks` names it by, root first.
var (
	stackLeaf  = []uint64{0x404000, 0x403005, 0x402005, 0x401005}
	idLeaf     = format.StackID(false, stackLeaf)
	stackKern  = []uint64{0xffffffff81000010, 0xffffffff81001005}
	idKern     = format.StackID(true, stackKern)
	wantFrames = "main;top;mid;leaf;entry;do_sys"
	stackTable = &format.StackTable{
		Stacks:  []format.Stack{{ID: idLeaf, Frames: stackLeaf}, {ID: idKern, Kernel: true, Frames: stackKern}},
		Objects: []format.Object{{ID: 1, Path: "/bin/app"}, {ID: 2, Path: "[kernel]", Kernel: true}},
		Maps:    []format.Mapping{{PID: 10, Since: base, Start: 0x400000, End: 0x500000, Object: 1}},
		Symbols: []format.Symbol{
			{Object: 1, Addr: 0x401000, Size: 0x100, Name: "main"}, {Object: 1, Addr: 0x402000, Size: 0x100, Name: "top"},
			{Object: 1, Addr: 0x403000, Size: 0x100, Name: "mid"}, {Object: 1, Addr: 0x404000, Size: 0x100, Name: "leaf"},
			{Object: 2, Addr: 0xffffffff81000000, Size: 0x100, Name: "do_sys"}, {Object: 2, Addr: 0xffffffff81001000, Size: 0x100, Name: "entry"},
		},
	}
)

// appMeta has two functions' entry and return probes, which pair by
// themselves, and a USDT probe of neither.
func appMeta() *format.Meta {
	return &format.Meta{Host: "h", Kernel: "6.1", StartBoot: base, StartWall: time.Unix(1_700_000_000, 0),
		Window: &format.Window{Start: base, End: base + 200_000},
		Probes: []format.Probe{
			{Name: "f", Kind: "uprobe", Spec: "u:/bin/app:f(arg0,ustack,kstack)", Target: "/bin/app", Fields: []format.Field{
				{Name: "arg0", Type: format.Int64}, {Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}}},
			{Name: "f:return", Kind: "uretprobe", Spec: "ur:/bin/app:f(retval:s32)", Target: "/bin/app", Fields: []format.Field{
				{Name: "retval", Type: format.Int32}}},
			{Name: "g", Kind: "uprobe", Spec: "u:/bin/app:g(str(arg0))", Target: "/bin/app", Fields: []format.Field{
				{Name: "name", Type: format.String}, {Name: "buf", Type: format.Uint64, Pointer: true}}},
			{Name: "g:return", Kind: "uretprobe", Spec: "ur:/bin/app:g", Target: "/bin/app"},
			{Name: "tick", Kind: "usdt", Spec: "tick=U:/bin/app:app:tick", Target: "/bin/app", Fields: []format.Field{
				{Name: "n", Type: format.Uint64}, {Name: "msg", Type: format.String}}},
		}}
}

// appRows returns the rows of a capture of appMeta in the order a
// recorder merging two CPUs' rings might write them (each CPU's rows in
// time order, runs of the two interleaved, so that times step back), with
// loss records:
//   - tid 10 (cpu 0): f calls g and itself, with a stack; ticks;
//   - tid 11 (cpu 1): a return of g without entry, then calls of g; its
//     comm changes from "worker" to "renamed" half way;
//   - tid 20 (cpu 1, another process): ticks, and an entry of f that never
//     returns;
//   - tid 40 (cpu 0): f nested deeper than replay.MaxDepth, so that entries
//     are dropped and as many returns find none.
func appRows() []row {
	var cpu0, cpu1 []row
	for k := int64(0); k < 40; k++ {
		at := base + k*1000
		a := func(probe uint16, dt int64, ints []uint64, strs []string) {
			cpu0 = append(cpu0, row{probe: probe, pid: 10, tid: 10, cpu: 0, t: at + dt, ints: ints, strs: strs, comm: "app"})
		}
		a(0, 0, []uint64{uint64(k), idLeaf, idKern}, nil)
		a(2, 100, []uint64{0, 0xdead0000 + uint64(k)}, []string{fmt.Sprintf("req-%d", k)})
		a(4, 150, []uint64{uint64(k * 3)}, []string{"", "tick \u00e9"})
		a(3, 200, nil, nil)
		a(0, 300, []uint64{uint64(k + 100), 0, 0}, nil)
		a(1, 400, []uint64{7}, nil)
		a(1, 500+k, []uint64{uint64(k)}, nil)
		comm := "worker"
		if k >= 20 {
			comm = "renamed"
		}
		b := func(probe uint16, pid, tid uint32, dt int64, ints []uint64, strs []string, comm string) {
			cpu1 = append(cpu1, row{probe: probe, pid: pid, tid: tid, cpu: 1, t: at + dt, ints: ints, strs: strs, comm: comm})
		}
		if k == 0 {
			b(3, 10, 11, 10, nil, nil, comm) // g returns, never entered
		}
		b(2, 10, 11, 30, []uint64{0, 0xbeef}, []string{"w"}, comm)
		b(4, 20, 20, 60, []uint64{uint64(1000 + k)}, []string{"", "other"}, "other")
		b(3, 10, 11, 230, nil, nil, comm)
		if k%10 == 5 {
			cpu1 = append(cpu1, row{probe: 4, cpu: 1, t: at + 240, lost: uint64(k)})
		}
	}
	cpu1 = append(cpu1, row{probe: 0, pid: 20, tid: 20, cpu: 1, t: base + 41_000, ints: []uint64{1}, comm: "other"})
	deep := replay.MaxDepth + 3
	for k := 0; k < deep; k++ {
		cpu0 = append(cpu0, row{probe: 0, pid: 40, tid: 40, t: base + 50_000 + int64(k), comm: "deep"})
	}
	for k := 0; k < deep; k++ {
		cpu0 = append(cpu0, row{probe: 1, pid: 40, tid: 40, t: base + 60_000 + int64(k), comm: "deep"})
	}
	// Runs of 7 rows of each CPU in turn: the second CPU's run starts
	// before the first's ends.
	var rows []row
	for len(cpu0) > 0 || len(cpu1) > 0 {
		n := min(7, len(cpu0))
		rows, cpu0 = append(rows, cpu0[:n]...), cpu0[n:]
		n = min(7, len(cpu1))
		rows, cpu1 = append(rows, cpu1[:n]...), cpu1[n:]
	}
	return rows
}

// TestTrace writes a capture of nested calls, unmatched entries and
// returns, several threads and CPUs out of time order, loss records,
// strings, stacks, a renamed thread and a counter, and checks the trace
// against the rows and against bpftape's own latency pairing.
func TestTrace(t *testing.T) {
	rows := appRows()
	back := false
	for i := 1; i < len(rows); i++ {
		back = back || rows[i].t < rows[i-1].t
	}
	if !back {
		t.Fatal("the test capture's rows are in time order: it tests nothing of ordering")
	}
	c := writeCapture(t, appMeta(), stackTable, rows, 5)
	res, m := export(t, c, Options{Counters: []string{"tick.n"}})

	// Slices as latency pairs them, and unmatched events.
	var calls, unmatched uint64
	for _, p := range [][2]string{{"f", "f:return"}, {"g", "g:return"}} {
		c, u := checkLatency(t, c, m, p[0], p[1], nil, replay.RowFilter{})
		calls, unmatched = calls+c, unmatched+u
	}
	if res.Slices != calls || uint64(len(m.slices)) != calls+1 { // +1: the capture's window
		t.Errorf("result %d slices, trace %d, latency %d calls", res.Slices, len(m.slices), calls)
	}
	if res.Unmatched != unmatched || unmatched != 1+1+3+3 {
		t.Errorf("result %d unmatched, latency %d, want 8 (g:return on 11, f on 20, 3 f and 3 f:return on 40)", res.Unmatched, unmatched)
	}
	if res.Clamped != 0 {
		t.Errorf("%d times clamped in a capture whose threads run forward", res.Clamped)
	}
	// Nesting on tid 10: f (depth 0) holds g and f (depth 1).
	tid10, _ := m.threadTrack(t, 10)
	depth := map[string][]int{}
	for _, s := range m.slices {
		if s.track == tid10 {
			depth[s.name] = append(depth[s.name], s.depth)
		}
	}
	if fmt.Sprint(depth["g"][:2], depth["f"][:4]) != "[1 1] [1 0 1 0]" {
		t.Errorf("depths on tid 10: g %v, f %v; want g at 1, f at 0 and 1 (sorted by end)", depth["g"][:2], depth["f"][:4])
	}
	// Arguments and stacks of a call of f.
	var outer *slice
	for i := range m.slices {
		if s := &m.slices[i]; s.track == tid10 && s.name == "f" && s.depth == 0 && s.begin == uint64(base+3000) {
			outer = s
		}
	}
	if outer == nil {
		t.Fatal("no slice of f at +3 us on tid 10")
	}
	if outer.end != uint64(base+3000+503) || outer.args["arg0"] != "3" || outer.args["return.retval"] != "3" || outer.args["cpu"] != "0" {
		t.Errorf("f at +3 us: ends %d, args %v", outer.end-uint64(base), outer.args)
	}
	if got := strings.Join(outer.frames, ";"); got != wantFrames {
		t.Errorf("f's callstack %q, want %q (bpftape stacks)", got, wantFrames)
	}

	// Instants: the ticks, named after their probe, with their fields.
	var ticks []instant
	for _, in := range m.instants {
		if in.args["unmatched"] == "" && !strings.HasPrefix(in.name, "lost ") {
			ticks = append(ticks, in)
		}
	}
	if res.Instants != 80 || len(ticks) != 80 {
		t.Errorf("result %d instants, trace %d, want the 80 ticks", res.Instants, len(ticks))
	}
	for _, in := range ticks {
		if in.name != "tick" || in.args["n"] == "" || (in.args["msg"] != "tick \u00e9" && in.args["msg"] != "other") {
			t.Errorf("instant %q, args %v", in.name, in.args)
			break
		}
	}
	// Strings and addresses of g.
	for _, s := range m.slices {
		if s.name == "g" && s.track == tid10 && s.begin == uint64(base+100) && (s.args["name"] != "req-0" || s.args["buf"] != "0xdead0000") {
			t.Errorf("g at +100 ns: args %v", s.args)
		}
	}

	// The counter: every tick's n at its time.
	var want [][2]float64
	for _, r := range rows {
		if r.probe == 4 && r.lost == 0 {
			want = append(want, [2]float64{float64(r.t), float64(r.ints[0])})
		}
	}
	var track uint64
	for _, d := range m.described {
		if d.GetName() == "tick.n" && d.Counter != nil {
			track = d.GetUuid()
		}
	}
	got := m.counters[track]
	sortPairs(want)
	sortPairs(got)
	if res.Counters != uint64(len(want)) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counter tick.n: %d values %v\nwant %v", res.Counters, got, want)
	}

	// Loss records on the bpftape track, and the window.
	var lost []string
	var bpftape uint64
	for _, d := range m.described {
		if d.GetName() == "bpftape" {
			bpftape = d.GetUuid()
		}
	}
	for _, in := range m.instants {
		if in.track == bpftape {
			lost = append(lost, in.name)
		}
	}
	if res.LossRecords != 4 || strings.Join(lost, ",") != "lost 5 events,lost 15 events,lost 25 events,lost 35 events" {
		t.Errorf("%d loss records: %q", res.LossRecords, lost)
	}
	for _, s := range m.slices {
		if s.track == bpftape && (s.name != "capture" || s.begin != uint64(base) || s.end != uint64(base+200_000)) {
			t.Errorf("window slice %q %d..%d", s.name, s.begin, s.end)
		}
	}

	// Threads and processes: names from comm, the renamed one's last.
	_, d11 := m.threadTrack(t, 11)
	if d11.Thread.GetThreadName() != "renamed" || d11.Thread.GetPid() != 10 {
		t.Errorf("tid 11's last descriptor: %v", d11)
	}
	procs := map[int32]string{}
	for _, d := range m.described {
		if d.Process != nil {
			procs[d.Process.GetPid()] = d.Process.GetProcessName()
		}
	}
	if fmt.Sprint(procs) != "map[10:app 20:other 40:deep]" {
		t.Errorf("processes %v", procs)
	}

	// The clock: boot time to wall time at the start.
	if cl := m.clock; cl == nil || len(cl.Clocks) != 2 || cl.Clocks[0].GetTimestamp() != uint64(base) ||
		cl.Clocks[1].GetClockId() != uint32(pb.BuiltinClock_BUILTIN_CLOCK_REALTIME) ||
		cl.Clocks[1].GetTimestamp() != uint64(time.Unix(1_700_000_000, 0).UnixNano()) {
		t.Errorf("clock snapshot %v", m.clock)
	}
	// Two CPUs' interleaved runs need a few sequences, not one per packet.
	if m.sequences < 2 || m.sequences > 4 || res.Sequences != uint32(m.sequences) {
		t.Errorf("%d sequences (result %d), want 2 to 4 for two CPUs' runs", m.sequences, res.Sequences)
	}
}

func sortPairs(v [][2]float64) {
	sort.Slice(v, func(a, b int) bool { return v[a][0] < v[b][0] || v[a][0] == v[b][0] && v[a][1] < v[b][1] })
}

// TestRowFilter checks that a row filter selects the events the trace
// holds as it selects those latency pairs.
func TestRowFilter(t *testing.T) {
	c := writeCapture(t, appMeta(), stackTable, appRows(), 64)
	rows := replay.RowFilter{TIDs: []uint32{10, 20}}
	var buf bytes.Buffer
	res, _, err := Write(c, &buf, Options{Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	m := read(t, buf.Bytes())
	for _, p := range [][2]string{{"f", "f:return"}, {"g", "g:return"}} {
		checkLatency(t, c, m, p[0], p[1], nil, rows)
	}
	for _, d := range m.described {
		if d.Thread != nil && d.Thread.GetTid() != 10 && d.Thread.GetTid() != 20 {
			t.Errorf("thread %d outside the filter", d.Thread.GetTid())
		}
	}
	if res.Instants != 80 {
		t.Errorf("%d instants, want the 80 ticks of tids 10 and 20", res.Instants)
	}
}

// bioMeta has block-request probes that pair by dev and sector across
// threads, as biolatency pairs them.
var bioMeta = &format.Meta{Host: "h", StartBoot: base, StartWall: time.Unix(1_700_000_000, 0), Probes: []format.Probe{
	{Name: "issue", Kind: "tracepoint", Fields: []format.Field{{Name: "dev", Type: format.Uint32}, {Name: "sector", Type: format.Uint64}}},
	{Name: "complete", Kind: "tracepoint", Fields: []format.Field{{Name: "dev", Type: format.Uint32}, {Name: "sector", Type: format.Uint64}, {Name: "error", Type: format.Int32}}},
	{Name: "name", Kind: "tracepoint", Fields: []format.Field{{Name: "s", Type: format.String}}},
}}

// TestKeyed pairs requests issued and completed on different threads by
// key, overlapping, with a completion before any issue, an issue replaced
// by a later one of its key and one never completed: the slices go on
// lanes that each hold one at a time, as many as latency --key pairs.
// keyedRows are block requests issued and completed on different
// threads, paired by device and sector, and a few that find no partner.
func keyedRows() []row {
	rng := rand.New(rand.NewSource(1))
	var rows []row
	rows = append(rows, row{probe: 1, pid: 1, tid: 1, t: base, ints: []uint64{9, 9, 0}, comm: "irq"})
	for i := 0; i < 300; i++ {
		start := base + 10_000 + int64(i)*100
		d := 10 + rng.Int63n(1_500)
		dev, sector := uint64(1+(i/8)%2), uint64(i%8)*8
		rows = append(rows,
			row{probe: 0, pid: 100, tid: uint32(100 + i%3), cpu: uint16(i % 2), t: start, ints: []uint64{dev, sector}, comm: "dd"},
			row{probe: 1, pid: 0, tid: uint32(200 + i%5), cpu: uint16(i % 2), t: start + d, ints: []uint64{dev, sector, 0}, comm: "irq"})
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].t < rows[b].t })
	end := rows[len(rows)-1].t
	rows = append(rows,
		row{probe: 0, pid: 100, tid: 100, t: end + 10, ints: []uint64{7, 7}, comm: "dd"},
		row{probe: 2, pid: 100, tid: 100, t: end + 20, strs: []string{"x"}, comm: "dd"},
		row{probe: 0, pid: 100, tid: 101, t: end + 50, ints: []uint64{7, 7}, comm: "dd"},
		row{probe: 1, pid: 0, tid: 203, t: end + 80, ints: []uint64{7, 7, 0}, comm: "irq"},
		row{probe: 0, pid: 100, tid: 100, t: end + 90, ints: []uint64{9, 10}, comm: "dd"})
	return rows
}

func TestKeyed(t *testing.T) {
	rows := keyedRows()
	c := writeCapture(t, bioMeta, nil, rows, 16)
	key := []string{"dev", "sector"}
	res, m := export(t, c, Options{Pairs: []Pair{{"issue", "complete"}}, Key: key})
	calls, unmatched := checkLatency(t, c, m, "issue", "complete", key, replay.RowFilter{})
	if res.Slices != calls || res.Unmatched != unmatched || unmatched != 3 {
		t.Errorf("result %d slices, %d unmatched; latency %d calls, %d unmatched (want 3)", res.Slices, res.Unmatched, calls, unmatched)
	}
	lanes := map[uint64]bool{}
	for _, s := range m.slices {
		if s.name != "issue" {
			continue
		}
		lanes[s.track] = true
		if s.depth != 0 {
			t.Errorf("a slice begun with %d open on its lane", s.depth)
		}
		if s.args["dev"] != s.args["return.dev"] || s.args["sector"] != s.args["return.sector"] {
			t.Errorf("a slice pairs %v", s.args)
		}
		if d := m.tracks[s.track]; d.GetName() != "issue" || d.Thread != nil {
			t.Errorf("a keyed slice on track %v", d)
		}
	}
	// At most 16 requests are open at once (1,500 ns at one per 100 ns).
	if len(lanes) < 2 || len(lanes) > 17 {
		t.Errorf("%d lanes", len(lanes))
	}
	if res.Instants != 1 {
		t.Errorf("%d instants, want the name event", res.Instants)
	}
}

// TestCrossing: calls of two functions that overlap without nesting on a
// thread put each function's slices on a track of its own under the thread,
// so that every end still closes its own begin.
func TestCrossing(t *testing.T) {
	var rows []row
	for k := int64(0); k < 10; k++ {
		at := base + k*1000
		rows = append(rows,
			row{probe: 0, pid: 10, tid: 10, t: at, ints: []uint64{uint64(k)}, comm: "app"},
			row{probe: 2, pid: 10, tid: 10, t: at + 100, comm: "app"},
			row{probe: 1, pid: 10, tid: 10, t: at + 200, comm: "app"}, // f returns inside g
			row{probe: 3, pid: 10, tid: 10, t: at + 300, comm: "app"})
	}
	c := writeCapture(t, appMeta(), nil, rows, 5)
	res, m := export(t, c, Options{})
	for _, p := range [][2]string{{"f", "f:return"}, {"g", "g:return"}} {
		checkLatency(t, c, m, p[0], p[1], nil, replay.RowFilter{})
	}
	tid10, _ := m.threadTrack(t, 10)
	for _, s := range m.slices {
		if s.track == tid10 {
			t.Errorf("slice %s on the thread's track", s.name)
		}
		if d := m.tracks[s.track]; s.name != "capture" && (d.GetParentUuid() != tid10 || d.GetName() != s.name) {
			t.Errorf("slice %s on %v", s.name, d)
		}
	}
	if res.Slices != 20 {
		t.Errorf("%d slices, want 20", res.Slices)
	}
}

// TestSequences: rows of many CPUs whose runs step back take about one
// sequence per CPU; rows of a forged order (every row earlier than the
// last) take at most MaxSequences open at once, and still run forward.
func TestSequences(t *testing.T) {
	var rows []row
	for k := int64(0); k < 200; k++ {
		cpu := uint16(k % 8)
		rows = append(rows, row{probe: 4, pid: 1, tid: uint32(cpu) + 1, cpu: cpu, t: base + (k/8)*10 + int64(8-cpu)*100, ints: []uint64{1}, comm: "x"})
	}
	res, _ := export(t, writeCapture(t, appMeta(), nil, rows, 8), Options{})
	if res.Sequences > 9 {
		t.Errorf("%d sequences for 8 CPUs", res.Sequences)
	}
	rows = rows[:0]
	for k := int64(0); k < 300; k++ {
		rows = append(rows, row{probe: 4, pid: 1, tid: 1, t: base + 1_000_000 - k, ints: []uint64{1}, comm: "x"})
	}
	res, _ = export(t, writeCapture(t, appMeta(), nil, rows, 8), Options{})
	if res.Sequences < MaxSequences || res.Instants != 300 {
		t.Errorf("%d sequences, %d instants for 300 rows each earlier than the last", res.Sequences, res.Instants)
	}
}

// TestOptionErrors: options that name what the capture lacks are usage
// errors, with nothing written.
func TestOptionErrors(t *testing.T) {
	c := writeCapture(t, appMeta(), nil, appRows()[:20], 64)
	for _, o := range []Options{
		{Pairs: []Pair{{"f", "nope"}}},
		{Pairs: []Pair{{"nope", "f:return"}}},
		{Pairs: []Pair{{"f", "f"}}},
		{Pairs: []Pair{{"f", "g:return"}, {"f", "f:return"}}},
		{Pairs: []Pair{{"f", ""}}},
		{Counters: []string{"tick.msg"}},
		{Counters: []string{"tick.nope"}},
		{Counters: []string{"nope.n"}},
		{Counters: []string{"tick"}},
		{Counters: []string{"f.ustack"}},
		{Pairs: []Pair{{"f", "f:return"}}, Key: []string{"nope"}},
	} {
		var buf bytes.Buffer
		_, _, err := Write(c, &buf, o)
		if !usage.Is(err) {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%+v: wrote %d bytes", o, buf.Len())
		}
	}
}

// TestLeftOut: a found entry/return pair that a --pair takes a probe of
// is named in Result.LeftOut; one given as it is found, or untouched, is
// not.
func TestLeftOut(t *testing.T) {
	c := writeCapture(t, appMeta(), nil, appRows()[:40], 64)
	for _, tc := range []struct {
		pairs []Pair
		want  []string
	}{
		{nil, nil},
		{[]Pair{{"f", "f:return"}}, nil},
		{[]Pair{{"f", "g:return"}}, []string{"f,f:return (--pair f,g:return takes a probe of it)", "g,g:return (--pair f,g:return takes a probe of it)"}},
		{[]Pair{{"g", "f:return"}}, []string{"f,f:return (--pair g,f:return takes a probe of it)", "g,g:return (--pair g,f:return takes a probe of it)"}},
	} {
		var buf bytes.Buffer
		res, _, err := Write(c, &buf, Options{Pairs: tc.pairs})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.LeftOut, tc.want) {
			t.Errorf("pairs %v: left out %q, want %q", tc.pairs, res.LeftOut, tc.want)
		}
	}
}
