package record

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/boottime"
	"github.com/bpftape/bpftape/record/resolve"
)

// fakeLost holds lost counters by probe id, one per CPU.
type fakeLost map[uint16][]uint64

func (f fakeLost) LostCounts(probeID uint16, dst []uint64) []uint64 {
	return append(dst[:0], f[probeID]...)
}

// sample builds a raw ring record as the BPF program writes it.
func sample(class uint8, probe uint16, cpu uint16, pid uint32, t uint64, flags uint16, args []uint64, strs map[int]string) []byte {
	raw := make([]byte, bpf.SampleSize(class))
	le := binary.LittleEndian
	le.PutUint64(raw[bpf.OffTime:], t)
	le.PutUint32(raw[bpf.OffPID:], pid)
	le.PutUint32(raw[bpf.OffTID:], pid+1)
	le.PutUint16(raw[bpf.OffProbeID:], probe)
	le.PutUint16(raw[bpf.OffCPU:], cpu)
	le.PutUint16(raw[bpf.OffNargs:], uint16(len(args)))
	le.PutUint16(raw[bpf.OffFlags:], flags)
	for i, a := range args {
		le.PutUint64(raw[bpf.OffArgs+8*i:], a)
	}
	for slot, s := range strs {
		copy(raw[bpf.OffStrs+slot*bpf.StrSlotSize:], s+"\x00stale")
	}
	return raw
}

// commRecord builds a raw comm record for thread tid of process pid.
func commRecord(pid, tid uint32, comm string) []byte {
	raw := make([]byte, bpf.CommRecordSize)
	le := binary.LittleEndian
	le.PutUint32(raw[bpf.OffPID:], pid)
	le.PutUint32(raw[bpf.OffTID:], tid)
	le.PutUint16(raw[bpf.OffProbeID:], bpf.CommProbeID)
	copy(raw[bpf.OffComm:], comm)
	return raw
}

// TestDrainerDecode feeds hand-made samples through the drainer into a
// capture and reads them back, with loss records from per-CPU counters.
func TestDrainerDecode(t *testing.T) {
	ints := &resolve.Probe{Meta: format.Probe{Name: "ints", Kind: "uprobe", Fields: []format.Field{
		{Name: "arg0", Type: format.Int32}, {Name: "arg2", Type: format.Uint64}}}}
	if _, err := ints.ProbeSpec(make([]bpf.ArgSpec, 2)); err != nil {
		t.Fatal(err)
	}
	strs := &resolve.Probe{Meta: format.Probe{Name: "strs", Kind: "usdt", Fields: []format.Field{
		{Name: "arg0", Type: format.Int8}, {Name: "arg1", Type: format.String}, {Name: "arg2", Type: format.String}}}}
	if _, err := strs.ProbeSpec(make([]bpf.ArgSpec, 3)); err != nil {
		t.Fatal(err)
	}
	if ints.Class != bpf.ClassArgs2 || strs.Class != bpf.ClassArgs12Str4 || strs.StrSlot[1] != 0 || strs.StrSlot[2] != 1 {
		t.Fatalf("classes %d %d, slots %v", ints.Class, strs.Class, strs.StrSlot)
	}
	probes := []*resolve.Probe{ints, strs}
	path := filepath.Join(t.TempDir(), "c.arrow")
	w, err := format.Create(path, &format.Meta{Probes: []format.Probe{ints.Meta, strs.Meta}}, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lost := fakeLost{0: {0, 0}, 1: {0, 0}}
	forgot := 0
	d := newDrainer(nil, w, lost, probes, func() error { forgot++; return nil })

	feed := [][]byte{
		commRecord(100, 101, "virtnet"),
		sample(bpf.ClassArgs2, 0, 1, 100, 1000, 0, []uint64{uint64(0xffffffff_fffffff6), 1 << 40}, nil),
		sample(bpf.ClassArgs12Str4, 1, 0, 100, 1001, bpf.FlagStrTruncated, []uint64{uint64(0xffffffff_ffffff80), 6, 0}, map[int]string{0: "Hello!", 1: ""}),
		sample(bpf.ClassArgs2, 5, 0, 100, 1002, 0, []uint64{1, 2}, nil), // no probe 5
		sample(bpf.ClassArgs6, 0, 0, 100, 1003, 0, []uint64{1, 2}, nil), // wrong class
		sample(bpf.ClassArgs2, 0, 0, 100, 1004, 0, []uint64{1}, nil),    // wrong nargs
		commRecord(100, 101, "renamed"),
		sample(bpf.ClassArgs2, 0, 0, 100, 1006, 0, []uint64{8, 0}, nil),
		sample(bpf.ClassArgs2, 0, 0, 101, 1005, bpf.FlagReadFault, []uint64{7, 0}, nil), // tid 102: no comm record
		[]byte{1, 2, 3},
	}
	for _, raw := range feed {
		if err := d.sample(raw); err != nil {
			t.Fatal(err)
		}
	}
	lost[0] = []uint64{3, 0}
	lost[1] = []uint64{1, 2}
	if err := d.readLost(); err != nil {
		t.Fatal(err)
	}
	lost[0] = []uint64{5, 0}
	if err := d.readLost(); err != nil {
		t.Fatal(err)
	}
	if d.malformed != 4 || d.faults != 1 || d.truncated != 1 || d.events[0] != 3 || d.events[1] != 1 ||
		d.lostN[0] != 5 || d.lostN[1] != 3 || d.noComm != 1 || forgot != 0 {
		t.Errorf("malformed %d faults %d truncated %d events %v lost %v noComm %d forgot %d",
			d.malformed, d.faults, d.truncated, d.events, d.lostN, d.noComm, forgot)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	c := readCapture(t, path)
	if c.recovered || len(c.rows["ints"]) != 3 || len(c.rows["strs"]) != 1 || c.lost["ints"] != 5 || c.lost["strs"] != 3 || c.lossRows != 4 {
		t.Fatalf("capture: %+v", c)
	}
	r := c.rows["ints"][0]
	if r.ints["arg0"] != -10 || r.ints["arg2"] != 1<<40 || r.pid != 100 || r.tid != 101 || r.cpu != 1 || r.comm != "virtnet" || r.time != 1000 {
		t.Errorf("ints row %+v", r)
	}
	r = c.rows["strs"][0]
	if r.ints["arg0"] != -128 || r.strs["arg1"] != "Hello!" || r.strs["arg2"] != "" || r.comm != "virtnet" {
		t.Errorf("strs row %+v", r)
	}
	if r := c.rows["ints"][1]; r.comm != "renamed" || r.ints["arg0"] != 8 {
		t.Errorf("row after the rename %+v", r)
	}
	if r := c.rows["ints"][2]; r.comm != "" || r.tid != 102 {
		t.Errorf("row without a comm record %+v", r)
	}
}

// TestCommTableGenerations fills the comm table past maxComms: it must ask
// the programs to resend comms once, and still answer for the threads of the
// previous generation.
func TestCommTableGenerations(t *testing.T) {
	forgot := 0
	ct := newCommTable(func() error { forgot++; return nil })
	for tid := range uint32(maxComms + 10) {
		if err := ct.set(tid, []byte(fmt.Sprintf("t%d", tid))); err != nil {
			t.Fatal(err)
		}
	}
	if forgot != 1 {
		t.Fatalf("forgot %d times, want 1", forgot)
	}
	for _, tid := range []uint32{0, 7, maxComms - 1, maxComms, maxComms + 9} {
		if got, want := string(ct.get(tid)), fmt.Sprintf("t%d", tid); got != want {
			t.Errorf("tid %d: comm %q, want %q", tid, got, want)
		}
	}
	if ct.get(maxComms+10) != nil {
		t.Error("comm of a thread no record named")
	}
	for tid := range uint32(maxComms) { // a third generation drops the first
		ct.set(1<<20+tid, []byte("x"))
	}
	if forgot != 2 || ct.get(0) != nil || string(ct.get(maxComms+9)) != fmt.Sprintf("t%d", maxComms+9) {
		t.Errorf("after a third generation: forgot %d, tid 0 %q", forgot, ct.get(0))
	}
}

// TestDrainerNoAllocs checks that decoding and appending a sample does not
// allocate per event (the writer's column buffers grow, amortised).
func TestDrainerNoAllocs(t *testing.T) {
	p := &resolve.Probe{Meta: format.Probe{Name: "p", Kind: "usdt", Fields: []format.Field{
		{Name: "arg0", Type: format.Int64}, {Name: "arg1", Type: format.String}}}}
	if _, err := p.ProbeSpec(make([]bpf.ArgSpec, 2)); err != nil {
		t.Fatal(err)
	}
	w, err := format.Create(filepath.Join(t.TempDir(), "c.arrow"), &format.Meta{Probes: []format.Probe{p.Meta}},
		format.WriterOptions{BatchRows: 1 << 30, BatchBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d := newDrainer(nil, w, fakeLost{}, []*resolve.Probe{p}, nil)
	if err := d.sample(commRecord(1, 2, "c")); err != nil {
		t.Fatal(err)
	}
	raw := sample(bpf.ClassArgs12Str4, 0, 0, 1, 1, 0, []uint64{42, 6}, map[int]string{0: "Hello!"})
	for range 10000 { // grow the buffers first
		d.sample(raw)
	}
	allocs := testing.AllocsPerRun(10000, func() {
		if err := d.sample(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.01 {
		t.Errorf("%.3f allocations per sample", allocs)
	}
}

// BenchmarkDrainerSample decodes and appends one 1-arg uprobe sample per
// op (the ring reading and the writer's encoding are not in it).
func BenchmarkDrainerSample(b *testing.B) {
	p := &resolve.Probe{Meta: format.Probe{Name: "p", Kind: "uprobe", Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}}}
	if _, err := p.ProbeSpec(make([]bpf.ArgSpec, 1)); err != nil {
		b.Fatal(err)
	}
	w, err := format.NewWriter(io.Discard, &format.Meta{Probes: []format.Probe{p.Meta}},
		format.WriterOptions{Compression: format.None})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	d := newDrainer(nil, w, fakeLost{}, []*resolve.Probe{p}, nil)
	if err := d.sample(commRecord(1, 2, "workload")); err != nil {
		b.Fatal(err)
	}
	raw := sample(p.Class, 0, 1, 1, 1000, 0, []uint64{1514}, nil)
	b.ResetTimer()
	for i := range b.N {
		binary.LittleEndian.PutUint64(raw[bpf.OffTime:], uint64(1000+i))
		if err := d.sample(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLossStampAfterWindow: loss counts read after the capture window
// closed are stamped with its end, when they happened at the latest (the
// stop's last read stamped them later than every event, outside the
// window that the time filters and `info` go by).
func TestLossStampAfterWindow(t *testing.T) {
	p := &resolve.Probe{Meta: format.Probe{Name: "f", Kind: "uprobe"}}
	path := filepath.Join(t.TempDir(), "c.arrow")
	w, err := format.Create(path, &format.Meta{Probes: []format.Probe{p.Meta}}, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lost := fakeLost{0: {3, 0}}
	d := newDrainer(nil, w, lost, []*resolve.Probe{p}, nil)
	if err := d.readLost(); err != nil { // while the window is open: now
		t.Fatal(err)
	}
	before := boottime.Now()
	lost[0] = []uint64{3, 5}
	end := before - 1e9
	d.windowEnd.Store(end)
	if err := d.readLost(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var times []int64
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				times = append(times, b.Time[i])
				if i == 1 && (n != 5 || b.Time[i] != end) {
					t.Errorf("the loss read after the window: %d at %d, want 5 at its end %d", n, b.Time[i], end)
				}
			}
		}
	}
	if len(times) != 2 || times[0] > before || times[0] < before-60e9 {
		t.Errorf("loss records at %v (read at about %d)", times, before)
	}
}
