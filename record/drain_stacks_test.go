package record

import (
	"encoding/binary"
	"io"
	"reflect"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/record/resolve"
)

// stackRecord builds a raw stack record of thread pid+1 at time t for probe.
func stackRecord(probe uint16, pid uint32, t uint64, flags uint16, retaddr uint64, frames ...uint64) []byte {
	raw := make([]byte, bpf.StackHeaderSize+8*len(frames))
	le := binary.LittleEndian
	le.PutUint64(raw[bpf.OffTime:], t)
	le.PutUint32(raw[bpf.OffPID:], pid)
	le.PutUint32(raw[bpf.OffTID:], pid+1)
	le.PutUint16(raw[bpf.OffProbeID:], bpf.StackProbeID)
	le.PutUint16(raw[bpf.OffNargs:], uint16(len(frames)))
	le.PutUint16(raw[bpf.OffFlags:], flags)
	le.PutUint16(raw[bpf.OffStackProbe:], probe)
	le.PutUint64(raw[bpf.OffStackRetaddr:], retaddr)
	for i, f := range frames {
		le.PutUint64(raw[bpf.OffStackFrames+8*i:], f)
	}
	return raw
}

// fakeStacks records what the drainer hands the stack table.
type fakeStacks struct {
	added [][]uint64
	kinds []bool
	calls []string
}

func (f *fakeStacks) Add(pid uint32, t int64, kernel bool, frames []uint64) uint64 {
	f.added = append(f.added, append([]uint64(nil), frames...))
	f.kinds = append(f.kinds, kernel)
	return format.StackID(kernel, frames)
}

func (f *fakeStacks) Take() *format.StackTable { return nil }

func (f *fakeStacks) Snapshot(pid uint32, t int64) { f.calls = append(f.calls, "snapshot") }

func (f *fakeStacks) Exec(pid uint32, t int64) { f.calls = append(f.calls, "exec") }

func (f *fakeStacks) Sync() {}

// TestDrainerStacks: a sample takes the stack records of its thread and
// time that came before it; the caller a uprobe at a function's entry
// misses goes back in unless the kernel put it there, which a recursive
// call's stack does not tell; a stack record
// whose sample never came (the ring was full) is not given to the next
// sample, which then has no stack.
func TestDrainerStacks(t *testing.T) {
	p := &resolve.Probe{Meta: format.Probe{Name: "leaf", Kind: "uprobe", Fields: []format.Field{
		{Name: "arg0", Type: format.Uint64}, {Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}}},
		UStack: 2, KStack: 3}
	if _, err := p.ProbeSpec(make([]bpf.ArgSpec, 1)); err != nil {
		t.Fatal(err)
	}
	w, err := format.NewWriter(io.Discard, &format.Meta{Probes: []format.Probe{p.Meta}}, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fs := &fakeStacks{}
	d := newDrainer(nil, w, fakeLost{}, []*resolve.Probe{p}, nil)
	d.stacks = fs
	feed := func(raws ...[]byte) {
		t.Helper()
		for _, raw := range raws {
			if err := d.sample(raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	const leaf, mid, top, main = 0x1010, 0x1120, 0x1230, 0x1340
	feed(commRecord(10, 11, "app"),
		// Before 6.11: mid missing, the record has the return address.
		stackRecord(0, 10, 100, bpf.StackRecKernel, 0, 0xffff1, 0xffff2),
		stackRecord(0, 10, 100, bpf.StackRecRetaddr, mid, leaf, top, main),
		sample(p.Class, 0, 0, 10, 100, 0, []uint64{7}, nil),
		// A recursive leaf called from leaf: the return address into
		// leaf is the caller's too, and still missing.
		stackRecord(0, 10, 150, bpf.StackRecRetaddr, leaf+4, leaf, leaf+4, mid, top, main),
		sample(p.Class, 0, 0, 10, 150, 0, []uint64{7}, nil),
		// A stack whose sample was lost, then a sample without stacks.
		stackRecord(0, 10, 300, 0, 0, leaf),
		sample(p.Class, 0, 0, 10, 400, 0, []uint64{9}, nil),
	)
	want := [][]uint64{{leaf, mid, top, main}, {0xffff1, 0xffff2}, {leaf, leaf + 4, leaf + 4, mid, top, main}}
	if !reflect.DeepEqual(fs.added, want) || !reflect.DeepEqual(fs.kinds, []bool{false, true, false}) {
		t.Errorf("stacks handed on: %x %v, want %x", fs.added, fs.kinds, want)
	}
	// 6.11 and later: the kernel puts mid there itself, and in a
	// recursive call leaf+4 twice, which no stack ever contradicts.
	d2 := newDrainer(nil, w, fakeLost{}, []*resolve.Probe{p}, nil)
	fs2 := &fakeStacks{}
	d2.stacks = fs2
	for _, raw := range [][]byte{
		commRecord(20, 21, "app"),
		stackRecord(0, 20, 100, bpf.StackRecRetaddr, leaf+4, leaf, leaf+4, leaf+4, mid, top, main),
		sample(p.Class, 0, 0, 20, 100, 0, []uint64{7}, nil),
		stackRecord(0, 20, 200, bpf.StackRecRetaddr, mid, leaf, mid, top, main),
		stackRecord(0, 20, 200, bpf.StackRecKernel, 0, 0xffff1, 0xffff2),
		sample(p.Class, 0, 0, 20, 200, 0, []uint64{8}, nil),
	} {
		if err := d2.sample(raw); err != nil {
			t.Fatal(err)
		}
	}
	want = [][]uint64{{leaf, leaf + 4, leaf + 4, mid, top, main}, {leaf, mid, top, main}, {0xffff1, 0xffff2}}
	if !reflect.DeepEqual(fs2.added, want) {
		t.Errorf("6.11: stacks handed on: %x, want %x", fs2.added, want)
	}
	// A thread (the first comm record, before the samples above): a
	// snapshot; its comm again, or renamed: nothing. The leader's first
	// record (an exec leaves only the leader), then the leader renamed
	// (an exec): re-reads.
	feed(commRecord(10, 11, "app"), commRecord(10, 11, "worker"), commRecord(10, 10, "app"), commRecord(10, 10, "app"), commRecord(10, 10, "newimage"))
	if want := []string{"snapshot", "exec", "exec"}; !reflect.DeepEqual(fs.calls, want) {
		t.Errorf("mapping reads asked for: %v, want %v", fs.calls, want)
	}
	if d.entryFixed != 2 || d.noStack != 3 || d.malformed != 0 {
		t.Errorf("entry fixed %d, samples without a stack %d (want 2, 3), malformed %d", d.entryFixed, d.noStack, d.malformed)
	}
}
