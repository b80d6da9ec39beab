package perfetto

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

// TestWireBytes checks that appendEvent writes TrackEvent packets as the
// protobuf library marshals them (trackEvent.packet), byte for byte:
// packets with every field and value kind the exporter sets, and the
// whole traces of the test captures (pairs, stacks, counters, strings,
// pointers, loss records, keyed pairs), written both ways.
func TestWireBytes(t *testing.T) {
	args := []arg{intArg("cpu", -5), uintArg("n", math.MaxUint64), strArg("s", "héllo"),
		{name: "p", kind: argPointer, n: 0xffff8880_00001000}, strArg("empty", "")}
	iids := []uint64{3, 300, 1, 2, 70000}
	d := &pb.InternedData{EventNames: []*pb.EventName{{Iid: proto.Uint64(1), Name: proto.String("f")}}}
	cases := []struct {
		ev                trackEvent
		ts                uint64
		seq, flags        uint32
		d                 *pb.InternedData
		nameIid, stackIid uint64
	}{
		{ev: trackEvent{typ: pb.TrackEvent_TYPE_SLICE_END, track: 1}, ts: 0, seq: 1},
		{ev: trackEvent{typ: pb.TrackEvent_TYPE_SLICE_BEGIN, track: 1 << 40, named: true, args: args},
			ts: 1 << 62, seq: 70000, flags: 3, d: d, nameIid: 1, stackIid: 9},
		{ev: trackEvent{typ: pb.TrackEvent_TYPE_INSTANT, track: 2, named: true, args: args[2:4]}, ts: 5, seq: 2, nameIid: 200},
		{ev: trackEvent{typ: pb.TrackEvent_TYPE_COUNTER, track: 3, counter: -1}, ts: 6, seq: 2, flags: 2},
		{ev: trackEvent{typ: pb.TrackEvent_TYPE_COUNTER, track: 3, isDouble: true, double: 1.8446744073709552e19}, ts: 7, seq: 2},
	}
	var scratch []byte
	for k, c := range cases {
		var interned []byte
		if c.d != nil {
			var err error
			if interned, err = proto.Marshal(c.d); err != nil {
				t.Fatal(err)
			}
		}
		ai := iids[:len(c.ev.args)]
		got := appendEvent(nil, c.ts, c.seq, c.flags, interned, &c.ev, c.nameIid, ai, c.stackIid, &scratch)
		want, err := proto.Marshal(c.ev.packet(c.ts, c.seq, c.flags, c.d, c.nameIid, ai, c.stackIid))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("packet %d: appendEvent wrote\n%x\nthe library\n%x", k, got, want)
		}
	}

	traces := map[string]func(t *testing.T) ([]byte, []byte){
		"pairs, stacks, counters": func(t *testing.T) ([]byte, []byte) {
			c := writeCapture(t, appMeta(), stackTable, appRows(), 5)
			return writeBoth(t, func(buf *bytes.Buffer) error {
				_, _, err := Write(c, buf, Options{Counters: []string{"tick.n"}})
				return err
			})
		},
		"keyed": func(t *testing.T) ([]byte, []byte) {
			c := writeCapture(t, bioMeta, nil, keyedRows(), 7)
			return writeBoth(t, func(buf *bytes.Buffer) error {
				_, _, err := Write(c, buf, Options{Pairs: []Pair{{"issue", "complete"}}, Key: []string{"dev", "sector"}})
				return err
			})
		},
	}
	for name, f := range traces {
		t.Run(name, func(t *testing.T) {
			fast, lib := f(t)
			if len(fast) < 1000 {
				t.Fatalf("a trace of %d bytes: it tests little", len(fast))
			}
			if !bytes.Equal(fast, lib) {
				t.Errorf("the trace differs: %d bytes, %d by the library alone", len(fast), len(lib))
			}
		})
	}
}

// writeBoth runs write with appendPacket and with the library alone.
func writeBoth(t *testing.T, write func(*bytes.Buffer) error) (fast, lib []byte) {
	var a, b bytes.Buffer
	if err := write(&a); err != nil {
		t.Fatal(err)
	}
	marshalAll = true
	defer func() { marshalAll = false }()
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes()
}
