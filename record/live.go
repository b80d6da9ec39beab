package record

import (
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/record/resolve"
)

// Live is shown a recording while it is made, for a live view of it
// (bpftape record --print): the capture is written as it would be
// without one, and the Live sees what the capture gets, as it gets it.
//
// Event, Lost and Seen are called from the drainer's goroutine, one at a
// time, between appends to the capture: they must not block, or the ring
// buffers fill and events are lost.
type Live interface {
	// Check is given the probes once they are resolved, before anything
	// is attached, started or created: an error (a usage error for an
	// analysis that names a probe or field the recording lacks) ends the
	// recording before it starts.
	Check(probes []format.Probe) error
	// Start is given the capture's metadata once every probe is attached,
	// before the first event. The recorder changes it later (the window's
	// end, a rotated part's start): keep a copy, not the pointer.
	Start(m *format.Meta)
	// Event is each event the capture got, after it got it. e and its
	// slices are reused for the next event.
	Event(e *format.Event)
	// Lost is each loss record the capture got: n events of probe lost on
	// cpu at about boot time t.
	Lost(probe, cpu uint16, t int64, n uint64)
	// Seen says that every event with a boot time before t has been
	// passed to Event: the ring buffers were read to their end after t.
	// An event whose program read its time before t but reserved its ring
	// record after may still come (microseconds later): allow a margin.
	Seen(t int64)
}

// liveProbes are the probes' metadata, for Live.Check.
func liveProbes(probes []*resolve.Probe) []format.Probe {
	out := make([]format.Probe, len(probes))
	for i, p := range probes {
		out[i] = p.Meta
		out[i].Fields = append([]format.Field(nil), p.Meta.Fields...)
	}
	return out
}
