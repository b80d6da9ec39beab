// Package formattest generates a realistic, deterministic stream of capture
// events, shared by the format benchmarks and bench/'s replay benchmark so
// that both measure the same data.
package formattest

import (
	"math/rand"

	"github.com/bpftape/bpftape/format"
)

// Stream generates seed-like events: three probes of a virtio-net
// RX/TX path (one or two integers each) on a handful of threads, in bursts
// of packets whose sizes repeat (MTU frames, ACKs) with some noise.
type Stream struct {
	rng   *rand.Rand
	t     int64
	burst int
	size  uint64
	tid   uint32
	ev    format.Event
}

var streamComms = [][]byte{[]byte("qemu-system-x86"), []byte("CPU 0/KVM"), []byte("CPU 1/KVM"), []byte("vhost-4242")}

// NewStream starts the same deterministic stream every time.
func NewStream() *Stream {
	s := &Stream{rng: rand.New(rand.NewSource(7)), t: 1e9}
	s.ev.Ints = make([]uint64, 2)
	return s
}

// Next returns the next event; the Event and its slices are reused.
func (s *Stream) Next() *format.Event {
	r := s.rng
	if s.burst == 0 {
		s.burst = 1 + r.Intn(64)
		s.t += 20_000 + r.Int63n(500_000) // idle between bursts
		s.tid = uint32(r.Intn(len(streamComms)))
		switch x := r.Intn(10); {
		case x < 6:
			s.size = 1514
		case x < 8:
			s.size = 66
		case x < 9:
			s.size = 9014
		default:
			s.size = 64 + uint64(r.Intn(16384))
		}
	}
	s.burst--
	s.t += 500 + r.Int63n(3000)
	e := &s.ev
	e.Time = s.t
	e.PID = 4242
	e.TID = 4242 + s.tid
	e.CPU = uint16(s.tid % 2)
	e.Comm = streamComms[s.tid]
	e.Probe = uint16(r.Intn(3))
	size := s.size
	if r.Intn(20) == 0 {
		size = 64 + uint64(r.Intn(1500))
	}
	e.Ints[0] = size
	if e.Probe == 2 {
		e.Ints[0] = uint64(1 + r.Intn(3)) // packets per TX flush
	}
	return e
}

// Pregenerate makes n events up front so that benchmarks measure the
// writer, not the generator; n must be a power of two.
func Pregenerate(n int) []format.Event {
	s := NewStream()
	evs := make([]format.Event, n)
	for i := range evs {
		e := *s.Next()
		e.Ints = append([]uint64(nil), e.Ints...)
		evs[i] = e
	}
	return evs
}

// Meta is the probe table of the stream: rx (arg2), rx_ret and tx_ret (retval).
func Meta() *format.Meta {
	return &format.Meta{Tool: "bench", Probes: []format.Probe{
		{Name: "rx", Kind: "uprobe", Fields: []format.Field{{Name: "arg2", Type: format.Uint64}}},
		{Name: "rx_ret", Kind: "uretprobe", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
		{Name: "tx_ret", Kind: "uretprobe", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	}}
}

// WriteFile writes n events of the stream into a capture at path with meta
// (Meta() if nil) and opts, and a loss record after every lossEvery events
// (none if 0): the input of the readers' tests and benchmarks.
func WriteFile(path string, n int64, meta *format.Meta, opts format.WriterOptions, lossEvery int64) error {
	if meta == nil {
		meta = Meta()
	}
	w, err := format.Create(path, meta, opts)
	if err != nil {
		return err
	}
	s := NewStream()
	for i := int64(0); i < n; i++ {
		if lossEvery > 0 && i%lossEvery == lossEvery-1 {
			if err := w.Lost(uint16(i%3), 1, i*1000, 17); err != nil {
				w.Close()
				return err
			}
		}
		if err := w.Append(s.Next()); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
