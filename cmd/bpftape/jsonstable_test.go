package main

import (
	"math/rand"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// writeStableCapture writes a small capture of calls of req, each ended
// by req_ret on its thread, by three threads of two commands over three
// seconds, with an id field that pairs them too, a return without entry
// at the start and an entry without return at the end. Its window ends
// after the last event.
func writeStableCapture(t *testing.T, path string) {
	t.Helper()
	const startBoot = int64(7_000_000_000)
	m := &format.Meta{
		Tool: "bpftape test", Host: "stable-host", Kernel: "6.1.0-test",
		CommandLine: []string{"bpftape", "record", "(synthetic)"},
		StartWall:   time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), StartBoot: startBoot,
		Window: &format.Window{Start: startBoot},
		Probes: []format.Probe{
			{Name: "req", Kind: "uprobe", Spec: "req=u:/bin/app:handle(arg0,arg1)", Target: "/bin/app",
				Fields: []format.Field{{Name: "id", Type: format.Uint64}, {Name: "len", Type: format.Int64}}},
			{Name: "req_ret", Kind: "uretprobe", Spec: "req_ret=ur:/bin/app:handle", Target: "/bin/app",
				Fields: []format.Field{{Name: "id", Type: format.Uint64}, {Name: "retval", Type: format.Int64}}},
		},
	}
	rng := rand.New(rand.NewSource(1))
	var evs []format.Event
	ev := func(t int64, tid uint32, probe uint16, id, v uint64) {
		comm := "web"
		if tid == 13 {
			comm = "db"
		}
		evs = append(evs, format.Event{Time: t, CPU: uint16(tid % 2), PID: 10, TID: tid, Comm: []byte(comm), Probe: probe, Ints: []uint64{id, v}})
	}
	ev(startBoot+1000, 11, 1, 0, 0) // a return without entry
	id := uint64(1)
	for _, tid := range []uint32{11, 12, 13} {
		ts := startBoot + 10_000 + int64(tid)*1000
		for range 400 {
			d := 20_000 + rng.Int63n(2_000_000) // 20 µs to 2 ms
			ev(ts, tid, 0, id, uint64(1+rng.Intn(4000)))
			ev(ts+d, tid, 1, id, uint64(rng.Intn(100)))
			ts += d + rng.Int63n(5_000_000)
			id++
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time < evs[j].Time })
	last := evs[len(evs)-1].Time
	ev(last+1000, 12, 0, id, 1) // an entry without return
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		if err := w.Append(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Meta().Window.End = last + 2000
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestJSONStable runs every verb that prints JSON of a capture twice, more
// than a second apart, and compares the outputs byte for byte: what they
// print, the time stamps too, comes from the capture, not from when they
// ran. The report, whose page has a date, must be reproducible too.
func TestJSONStable(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "stable.arrow")
	writeStableCapture(t, f)
	runs := [][]string{
		{"hist", f, "req", "len", "--json"},
		{"hist", f, "req", "len", "--json", "--stats"},
		{"hist", f, "req", "len", "--json", "--stats", "--by", "comm"},
		{"hist", f, "req", "len", "--json", "--interval", "1s", "--by", "comm"},
		{"hist", f, "req", "len", "--json", "--stats", "--style", "bpftrace"},
		{"hist", f, "req", "len", "--json", "--stats", "--linear", "0,4000,500"},
		{"latency", f, "req", "req_ret", "--json"},
		{"latency", f, "req", "req_ret", "--json", "-u"},
		{"latency", f, "req", "req_ret", "--json", "-m"},
		{"latency", f, "req", "req_ret", "--json", "-m", "--by", "comm"},
		{"latency", f, "req", "req_ret", "--json", "-u", "--interval", "1s"},
		{"latency", f, "req", "req_ret", "--json", "--key", "id"},
		{"requests", f, "req", "len", "req_ret", "retval", "--json"},
		{"requests", f, "req", "len", "req_ret", "retval", "--json", "--key", "id"},
		{"compare", f, "req", "len", "req_ret", "retval", "--json"},
		{"compare", f, f, "req", "len", "--json"},
		{"info", "--json", f},
		{"count", "--json", f},
		{"count", "--json", "--by", "comm", f},
		{"report", f, "--latency", "req req_ret", "--requests", "req len req_ret retval", "--compare", "req len req_ret retval"},
	}

	// Every verb with --json is run, but doctor, which examines the host
	// at the moment it runs, not a capture, and version, which describes
	// the binary (version_test.go).
	covered := map[string]bool{"doctor": true, "version": true}
	for _, r := range runs {
		covered[r[0]] = true
	}
	jsonFlag := regexp.MustCompile(`(?m)^\s+--?json\b`)
	for name := range verbs {
		help, _, _ := runCLI(t, name, "--help")
		if jsonFlag.MatchString(help) && !covered[name] {
			t.Errorf("%s has --json: add it to this test", name)
		}
	}

	once := func() []string {
		outs := make([]string, len(runs))
		for i, args := range runs {
			out, errOut, code := runCLI(t, args...)
			if code != 0 || out == "" {
				t.Fatalf("%v: exit %d, %d bytes out: %s", args, code, len(out), errOut)
			}
			outs[i] = out
		}
		return outs
	}
	first := once()
	time.Sleep(1100 * time.Millisecond) // the JSON stamps have seconds
	second := once()
	for i, args := range runs {
		if first[i] != second[i] {
			t.Errorf("%v differs between two runs:\n%s", args, firstDiff(first[i], second[i]))
		}
	}

	// The stamps are the capture's end, as hist's are: every one but those
	// of the intervals, stamped with their own end.
	ts := regexp.MustCompile(`"ts": ?"([^"]*)"`)
	var want string
	if m := ts.FindStringSubmatch(first[0]); m != nil {
		want = m[1]
	} else {
		t.Fatalf("hist --json has no ts: %s", first[0])
	}
	for i, args := range runs {
		if slices.Contains(args, "--interval") {
			continue
		}
		for _, m := range ts.FindAllStringSubmatch(first[i], -1) {
			if m[1] != want {
				t.Errorf("%v: ts %q, hist's %q", args, m[1], want)
			}
		}
	}
	if !strings.Contains(first[6], `"calls":1200,`) {
		t.Errorf("latency: not the 1200 calls of the capture: %.300s", first[6])
	}
}

// firstDiff shows where a and b first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(i-80, 0)
	return "first: ..." + a[lo:min(i+80, len(a))] + "\nthen:  ..." + b[lo:min(i+80, len(b))]
}
