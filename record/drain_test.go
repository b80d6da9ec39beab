package record

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
)

// fakeLost is a per-CPU lost map.
type fakeLost map[uint32][]uint64

func (f fakeLost) Lookup(key, valueOut any) error {
	*valueOut.(*[]uint64) = append((*valueOut.(*[]uint64))[:0], f[key.(uint32)]...)
	return nil
}

// sample builds a raw ring record as the BPF program writes it.
func sample(class uint8, probe uint16, cpu uint16, pid uint32, t uint64, flags uint16, comm string, args []uint64, strs map[int]string) []byte {
	raw := make([]byte, bpf.SampleSize(class))
	le := binary.LittleEndian
	le.PutUint64(raw[bpf.OffTime:], t)
	le.PutUint32(raw[bpf.OffPID:], pid)
	le.PutUint32(raw[bpf.OffTID:], pid+1)
	le.PutUint16(raw[bpf.OffProbeID:], probe)
	le.PutUint16(raw[bpf.OffCPU:], cpu)
	le.PutUint16(raw[bpf.OffNargs:], uint16(len(args)))
	le.PutUint16(raw[bpf.OffFlags:], flags)
	copy(raw[bpf.OffComm:], comm)
	for i, a := range args {
		le.PutUint64(raw[bpf.OffArgs+8*i:], a)
	}
	for slot, s := range strs {
		copy(raw[bpf.OffStrs+slot*bpf.StrSlotSize:], s+"\x00stale")
	}
	return raw
}

// TestDrainerDecode feeds hand-made samples through the drainer into a
// capture and reads them back, with loss records from per-CPU counters.
func TestDrainerDecode(t *testing.T) {
	ints := &probe{meta: format.Probe{Name: "ints", Kind: "uprobe", Fields: []format.Field{
		{Name: "arg0", Type: format.Int32}, {Name: "arg2", Type: format.Uint64}}}}
	if _, err := ints.probeSpec(make([]bpf.ArgSpec, 2)); err != nil {
		t.Fatal(err)
	}
	strs := &probe{meta: format.Probe{Name: "strs", Kind: "usdt", Fields: []format.Field{
		{Name: "arg0", Type: format.Int8}, {Name: "arg1", Type: format.String}, {Name: "arg2", Type: format.String}}}}
	if _, err := strs.probeSpec(make([]bpf.ArgSpec, 3)); err != nil {
		t.Fatal(err)
	}
	if ints.class != bpf.ClassArgs2 || strs.class != bpf.ClassArgs12Str4 || strs.strSlot[1] != 0 || strs.strSlot[2] != 1 {
		t.Fatalf("classes %d %d, slots %v", ints.class, strs.class, strs.strSlot)
	}
	probes := []*probe{ints, strs}
	path := filepath.Join(t.TempDir(), "c.arrow")
	w, err := format.Create(path, &format.Meta{Probes: []format.Probe{ints.meta, strs.meta}}, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lost := fakeLost{0: {0, 0}, 1: {0, 0}}
	d := newDrainer(nil, w, lost, probes)

	feed := [][]byte{
		sample(bpf.ClassArgs2, 0, 1, 100, 1000, 0, "virtnet", []uint64{uint64(0xffffffff_fffffff6), 1 << 40}, nil),
		sample(bpf.ClassArgs12Str4, 1, 0, 100, 1001, bpf.FlagStrTruncated, "virtnet", []uint64{uint64(0xffffffff_ffffff80), 6, 0}, map[int]string{0: "Hello!", 1: ""}),
		sample(bpf.ClassArgs2, 5, 0, 100, 1002, 0, "bad", []uint64{1, 2}, nil), // no probe 5
		sample(bpf.ClassArgs6, 0, 0, 100, 1003, 0, "bad", []uint64{1, 2}, nil), // wrong class
		sample(bpf.ClassArgs2, 0, 0, 100, 1004, 0, "bad", []uint64{1}, nil),    // wrong nargs
		sample(bpf.ClassArgs2, 0, 0, 101, 1005, bpf.FlagReadFault, "x", []uint64{7, 0}, nil),
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
	if d.malformed != 4 || d.faults != 1 || d.truncated != 1 || d.events[0] != 2 || d.events[1] != 1 ||
		d.lostN[0] != 5 || d.lostN[1] != 3 {
		t.Errorf("malformed %d faults %d truncated %d events %v lost %v", d.malformed, d.faults, d.truncated, d.events, d.lostN)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	c := readCapture(t, path)
	if c.recovered || len(c.rows["ints"]) != 2 || len(c.rows["strs"]) != 1 || c.lost["ints"] != 5 || c.lost["strs"] != 3 || c.lossRows != 4 {
		t.Fatalf("capture: %+v", c)
	}
	r := c.rows["ints"][0]
	if r.ints["arg0"] != -10 || r.ints["arg2"] != 1<<40 || r.pid != 100 || r.tid != 101 || r.cpu != 1 || r.comm != "virtnet" || r.time != 1000 {
		t.Errorf("ints row %+v", r)
	}
	r = c.rows["strs"][0]
	if r.ints["arg0"] != -128 || r.strs["arg1"] != "Hello!" || r.strs["arg2"] != "" {
		t.Errorf("strs row %+v", r)
	}
}

// TestDrainerNoAllocs checks that decoding and appending a sample does not
// allocate per event (the writer's column buffers grow, amortised).
func TestDrainerNoAllocs(t *testing.T) {
	p := &probe{meta: format.Probe{Name: "p", Kind: "usdt", Fields: []format.Field{
		{Name: "arg0", Type: format.Int64}, {Name: "arg1", Type: format.String}}}}
	if _, err := p.probeSpec(make([]bpf.ArgSpec, 2)); err != nil {
		t.Fatal(err)
	}
	w, err := format.Create(filepath.Join(t.TempDir(), "c.arrow"), &format.Meta{Probes: []format.Probe{p.meta}},
		format.WriterOptions{BatchRows: 1 << 30, BatchBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d := newDrainer(nil, w, fakeLost{}, []*probe{p})
	raw := sample(bpf.ClassArgs12Str4, 0, 0, 1, 1, 0, "c", []uint64{42, 6}, map[int]string{0: "Hello!"})
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
