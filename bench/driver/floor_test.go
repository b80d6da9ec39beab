package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

func TestFloorBench(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synth.arrow")
	if err := formattest.WriteFile(path, 300_000, formattest.Meta(), format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	logf, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d := &driver{log: logf}
	vc := testCap(true, map[string]float64{"hist": 1}, 100<<10)
	d.floorBench(vc, path, 2)
	for _, v := range vc.runs {
		if v.floorErr != "" {
			t.Errorf("%s: %s", v.label, v.floorErr)
		}
		switch {
		case v.def.reads == nil && v.floor != 0:
			t.Errorf("%s reads nothing of the batches, floor %v", v.label, v.floor)
		case v.def.reads != nil && v.floor <= 0:
			t.Errorf("%s: floor %v", v.label, v.floor)
		}
	}
	// hist's CPU (1 s, testCap) over its floor.
	h := vc.find("hist")
	if q, ok := vc.floorRatio(h); !ok || q != 1/h.floor {
		t.Errorf("hist: floor ratio %v, %v, want %v", q, ok, 1/h.floor)
	}
	if _, ok := vc.floorRatio(vc.find("info")); ok {
		t.Errorf("info has a floor ratio")
	}
	// Each pass is decoded once a round, whichever verbs share it.
	log, err := os.ReadFile(logf.Name())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "decoding * alone"); n != 2 {
		t.Errorf("every column decoded %d times in 2 rounds:\n%s", n, log)
	}

	// A floor that cannot be measured says why, and the table says so.
	bad := testCap(true, nil, 100<<10)
	bad.runs[0].def.reads = reads1(func(capNames) []string { return []string{"rx.nosuch"} })
	d.floorBench(bad, path, 1)
	if e := bad.runs[0].floorErr; !strings.Contains(e, `no column "rx.nosuch"`) {
		t.Errorf("unknown column: floorErr %q", e)
	}
	var errs []string
	printVerbs(&bytes.Buffer{}, []*verbCap{bad}, &errs)
	if !strings.Contains(strings.Join(errs, "\n"), "rx.nosuch") {
		t.Errorf("the table's errors lack the failed floor: %q", errs)
	}
}

func TestFloorColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synth.arrow")
	if err := formattest.WriteFile(path, 1000, formattest.Meta(), format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	name := func(cols []int) string {
		var ns []string
		for _, c := range cols {
			ns = append(ns, r.Schema.Field(c).Name)
		}
		return strings.Join(ns, " ")
	}
	for _, c := range []struct {
		p    floorPass
		want string
	}{
		{floorPass{cols: []string{"time", "tid"}}, "time tid"},
		{floorPass{cols: []string{"comm", everyField}}, "comm rx.arg2 rx_ret.retval tx_ret.retval"},
		{floorPass{cols: []string{everyStack, "pid"}}, "pid"},
		{floorPass{cols: []string{field("rx", "arg2")}}, "rx.arg2"},
	} {
		cols, err := c.p.columns(r)
		if err != nil || name(cols) != c.want {
			t.Errorf("%v: %q, %v, want %q", c.p.cols, name(cols), err, c.want)
		}
	}
	if cols, err := (floorPass{all: true}).columns(r); cols != nil || err != nil {
		t.Errorf("every column: %v, %v, want nil (Select's every column)", cols, err)
	}
	// The report pairs an entry with its return by thread only where the
	// return is named for the entry.
	rec := capNames{entry: "f", field: "arg0", ret: "f:return", retField: "retval", stack: "ustack"}
	got := reportReads(rec)
	if len(got) != 2 || got[0].key() != "time,fields,tid" || got[1].key() != "stacks,pid" {
		t.Errorf("report on a recorded capture: %+v", got)
	}
	if got := reportReads(capNames{entry: "rx", ret: "rx_ret"}); len(got) != 1 || got[0].key() != "time,fields" {
		t.Errorf("report on the synthesized capture: %+v", got)
	}
}

func TestFloorTarget(t *testing.T) {
	// hist 1 s of CPU; report 3 s (0.33×, FAIL) whose columns take 2 s
	// to decode alone: 0.50× at most. latency passes: no floor said.
	vc := testCap(true, map[string]float64{"hist": 1, "report": 3, "latency": 1.5}, 100<<10)
	vc.find("report").floor = 2
	vc.find("latency").floor = 1
	ts := vc.targets(nil, "")
	if tg := findTarget(ts, "report ≥ 0.5×"); tg == nil || tg.result() != "FAIL" || !strings.HasSuffix(tg.measured, "; decoding alone 0.50×") {
		t.Errorf("report: %+v", tg)
	}
	if tg := findTarget(ts, "latency rx rx_ret ≥ 0.5×"); tg == nil || tg.result() != "PASS" || strings.Contains(tg.measured, "decoding") {
		t.Errorf("latency: %+v", tg)
	}
	var b bytes.Buffer
	var errs []string
	printVerbs(&b, []*verbCap{vc}, &errs)
	if !strings.Contains(b.String(), "decoding ×") || !strings.Contains(b.String(), "0.50×") {
		t.Errorf("the table lacks the floor:\n%s", b.String())
	}
}
