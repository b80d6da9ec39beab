package record

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/internal/usage"
)

// fakeLive keeps what a Live is shown.
type fakeLive struct {
	checkErr error
	probes   []format.Probe
	start    *format.Meta
	arg0     []int64 // of every event, in order
	times    []int64
	lost     uint64
	seen     []int64
	// worst is how far before the watermark an event came after it.
	worst int64
}

func (l *fakeLive) Check(probes []format.Probe) error {
	l.probes = probes
	return l.checkErr
}

func (l *fakeLive) Start(m *format.Meta) {
	c := *m
	l.start = &c
}

func (l *fakeLive) Event(e *format.Event) {
	l.arg0 = append(l.arg0, int64(e.Ints[0]))
	l.times = append(l.times, e.Time)
	if n := len(l.seen); n > 0 && e.Time < l.seen[n-1] {
		l.worst = max(l.worst, l.seen[n-1]-e.Time)
	}
}

func (l *fakeLive) Lost(probe, cpu uint16, t int64, n uint64) { l.lost += n }

func (l *fakeLive) Seen(t int64) { l.seen = append(l.seen, t) }

// TestLiveSeesCapture: a Live sees every event the capture gets, in its
// order, and watermarks that no event comes before.
func TestLiveSeesCapture(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	l := &fakeLive{}
	s, out := mustRecord(t, Options{Command: []string{exe, "spin", "2"}, Probes: []string{"u:" + exe + ":tick(arg0)"}, Live: l})
	c := readCapture(t, s.Output)
	rows := c.rows["tick"]
	t.Logf("%s: %d events, %d seen by the Live, %d watermarks", out, len(rows), len(l.arg0), len(l.seen))
	if len(l.probes) != 1 || l.probes[0].Name != "tick" || l.probes[0].Field("arg0") < 0 {
		t.Errorf("Check was given %+v", l.probes)
	}
	if l.start == nil || l.start.StartBoot != c.meta.StartBoot {
		t.Errorf("Start was given %+v, the capture's start is %d", l.start, c.meta.StartBoot)
	}
	if len(rows) == 0 || len(rows) != len(l.arg0) {
		t.Fatalf("the capture has %d events, the Live saw %d", len(rows), len(l.arg0))
	}
	for i, r := range rows {
		if r.ints["arg0"] != l.arg0[i] || r.time != l.times[i] {
			t.Fatalf("event %d: capture %d at %d, Live %d at %d", i, r.ints["arg0"], r.time, l.arg0[i], l.times[i])
		}
	}
	if l.lost != c.lost["tick"] {
		t.Errorf("Live saw %d lost, the capture %d", l.lost, c.lost["tick"])
	}
	// The drainer reads the rings at least every IdleDrainInterval.
	if min := int(2 * time.Second / IdleDrainInterval); len(l.seen) < min {
		t.Errorf("%d watermarks in 2s, want at least %d", len(l.seen), min)
	}
	for i := 1; i < len(l.seen); i++ {
		if l.seen[i] < l.seen[i-1] {
			t.Fatalf("watermark %d went back: %d after %d", i, l.seen[i], l.seen[i-1])
		}
	}
	if l.worst > int64(time.Millisecond) {
		t.Errorf("an event came %v before a watermark it followed", time.Duration(l.worst))
	}
}

// TestLiveCheckRefuses: a Live's Check error stops the recording before
// anything starts: no capture, no command.
func TestLiveCheckRefuses(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	exe := buildProbes(t)
	dir := t.TempDir()
	out, ran := filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ran")
	l := &fakeLive{checkErr: usage.Errorf("no such field")}
	s, err, _ := record(t, Options{Output: out, Command: []string{"touch", ran},
		Probes: []string{"u:" + exe + ":tick(arg0)"}, Live: l})
	if s != nil || !usage.Is(err) || err.Error() != "no such field" {
		t.Errorf("Record: %v, %v", s, err)
	}
	for _, f := range []string{out, ran} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists", f)
		}
	}
	if l.start != nil || len(l.arg0) > 0 {
		t.Errorf("a refused Live was started")
	}
}
