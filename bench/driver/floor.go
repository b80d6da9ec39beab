package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/bpftape/bpftape/format"
)

// The decoding floor of a verb: the CPU that decoding the columns it reads
// takes alone, with no analysis, read ahead as the verbs read (a goroutine
// per CPU, at most 8: replay.Capture), the batches' memory reused. A verb
// cannot spend less, so hist's CPU over it is the best ratio to hist the
// verb could reach on this file format: a target above it is out of reach
// of any analysis. (On one goroutine, decoding took 5-10% less CPU on the
// 2-CPU VM: the floor is the verbs' way of reading, not a better one.) The
// columns are the ones the verbs select (format.Reader.Select) on the
// bench's captures; the probe and lost columns are always decoded.

// floorPass is the columns one pass of a verb decodes, by name (time, cpu,
// pid, tid, comm or a field's column); every column when all is set.
type floorPass struct {
	cols []string
	all  bool
}

func (p floorPass) key() string {
	if p.all {
		return "*"
	}
	return strings.Join(p.cols, ",")
}

// field is the column of probe's field.
func field(probe, name string) string { return format.ColumnName(probe, name) }

// The names of a floorPass that stand for several columns of the capture.
const (
	everyField = "fields" // every field's column but stacks
	everyStack = "stacks" // every stack field's column
)

// columns returns the indices of pass p's columns in the capture r reads,
// nil for every column.
func (p floorPass) columns(r *format.Reader) ([]int, error) {
	if p.all {
		return nil, nil
	}
	cols := []int{}
	for _, name := range p.cols {
		switch name {
		case everyField, everyStack:
			for _, pr := range r.Meta.Probes {
				for _, f := range pr.Fields {
					if f.Type.IsStack() == (name == everyStack) {
						cols = append(cols, r.Column(f.Column))
					}
				}
			}
			continue
		}
		ci := fixedColumn(name)
		if ci < 0 {
			ci = r.Column(name)
		}
		if ci < 0 {
			return nil, fmt.Errorf("no column %q", name)
		}
		cols = append(cols, ci)
	}
	return cols, nil
}

// decodeCPU decodes pass p of every batch of the capture at path, read
// ahead as the verbs read, and returns the CPU seconds (user+sys) the
// process took.
func decodeCPU(path string, p floorPass) (float64, error) {
	r, err := format.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cols, err := p.columns(r)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if cols != nil {
		r.Select(cols)
	}
	r.Recycle, r.RecycleStrings = true, true
	r.ReadAhead = min(runtime.GOMAXPROCS(0), 8)
	before := cpuSeconds()
	for r.Next() {
	}
	spent := cpuSeconds() - before
	if err := r.Err(); err != nil {
		return 0, err
	}
	return spent, nil
}

// fixedColumn is the index of a fixed column by name, or -1.
func fixedColumn(name string) int {
	switch name {
	case "time":
		return format.ColTime
	case "cpu":
		return format.ColCPU
	case "pid":
		return format.ColPID
	case "tid":
		return format.ColTID
	case "comm":
		return format.ColComm
	}
	return -1
}

// cpuSeconds is this process's user+sys time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// floorBench measures the decoding floor of each verb of vc on path,
// rounds times (each pass once a round, a pass shared by verbs measured
// once), and sets each verb's floor to the median of its passes' sums.
func (d *driver) floorBench(vc *verbCap, path string, rounds int) {
	f := newFloorRun(vc)
	for range rounds {
		d.floorRound(f, path)
	}
	f.finish(vc)
}

// floorRun is the decoding floors of a capture's verbs being measured: a
// round at a time (floorRound), between the verbs' rounds, so that a
// host that slows down or speeds up during the bench moves the verbs'
// CPU, hist's and the floors alike, where floors measured after every
// verb's rounds put hist's CPU over a floor of another time (one run's
// latency floor came out at 0.49× hist, the runs before and after at
// 0.94× and 0.89×).
type floorRun struct {
	passes map[string]floorPass
	keys   []string      // passes', in order
	per    [][]floorPass // by verb
	cpu    map[string][]float64
	errs   map[string]string
}

func newFloorRun(vc *verbCap) *floorRun {
	f := &floorRun{passes: map[string]floorPass{}, per: make([][]floorPass, len(vc.runs)),
		cpu: map[string][]float64{}, errs: map[string]string{}}
	for j := range vc.runs {
		if reads := vc.runs[j].def.reads; reads != nil {
			f.per[j] = reads(vc.names)
		}
		for _, p := range f.per[j] {
			f.passes[p.key()] = p
		}
	}
	for k := range f.passes {
		f.keys = append(f.keys, k)
	}
	slices.Sort(f.keys)
	return f
}

// floorRound decodes each pass of f once.
func (d *driver) floorRound(f *floorRun, path string) {
	for _, k := range f.keys {
		if f.errs[k] != "" {
			continue
		}
		s, err := decodeCPU(path, f.passes[k])
		if err != nil {
			f.errs[k] = err.Error()
			continue
		}
		f.cpu[k] = append(f.cpu[k], s)
		d.logf("  decoding %s alone: %.3fs CPU", k, s)
	}
}

// finish sets each verb's floor to the sum of its passes' medians.
func (f *floorRun) finish(vc *verbCap) {
	for j, ps := range f.per {
		v := &vc.runs[j]
		if len(ps) == 0 {
			continue
		}
		total := 0.0
		for _, p := range ps {
			if e := f.errs[p.key()]; e != "" {
				v.floorErr = e
				break
			}
			total += median(f.cpu[p.key()])
		}
		if v.floorErr == "" {
			v.floor = total
		}
	}
}

// floorRatio is the best ratio to hist's events/s per core that v could
// reach: hist's CPU over v's decoding floor.
func (vc *verbCap) floorRatio(v *verbRun) (float64, bool) {
	h := vc.find("hist")
	if h == nil || v == nil || v.floor <= 0 || len(h.run.cpu) == 0 {
		return 0, false
	}
	return median(h.run.cpu) / v.floor, true
}
