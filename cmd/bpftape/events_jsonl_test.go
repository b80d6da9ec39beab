package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// jsonlProbes have strings, an address, stacks, fields named like the
// event's own keys (pid, comm), every integer width and no fields at all.
var jsonlProbes = []format.Probe{
	{Name: "str", Kind: "usdt", Spec: "str=U:/bin/x:p:s", Fields: []format.Field{
		{Name: "n", Type: format.Int32}, {Name: "s", Type: format.String}, {Name: "u", Type: format.Uint64},
		{Name: "p", Type: format.Uint64, Pointer: true}}},
	{Name: "stk", Kind: "uprobe", Spec: "stk=u:/bin/x:f(ustack,kstack,v)", Fields: []format.Field{
		{Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}, {Name: "v", Type: format.Int64}}},
	{Name: "tp", Kind: "tracepoint", Spec: "tp=t:sched:sched_process_exit", Fields: []format.Field{
		{Name: "comm", Type: format.String}, {Name: "pid", Type: format.Int32}, {Name: "prio", Type: format.Int8},
		{Name: "w", Type: format.Uint16}, {Name: "d", Type: format.Uint32}, {Name: "e", Type: format.Int16}}},
	{Name: "bare", Kind: "uprobe", Spec: "bare=u:/bin/x:g()"},
}

// writeJSONLCapture writes events of every jsonlProbes probe with hostile
// comms and strings, 64-bit extremes and loss records; it returns the
// capture's path and the loss records' total.
func writeJSONLCapture(t *testing.T) (string, uint64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jsonl.arrow")
	m := &format.Meta{Host: "h", StartBoot: 5e9, StartWall: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Probes: jsonlProbes}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	comms := []string{"worker", "a b\tc", "rtl\u202eevil", "q\"uote\\", "bad\xffutf", "日本", "x\x1b[2J", "\u2028sep"}
	strs := []string{"", "plain", "quo\"te", "back\\slash", "nl\nx", "bad\xfe\xffbytes", "\u202eRLO", "emoji 😀", "\U000E0041tag", "nul\x00z"}
	ints := []uint64{0, 1, math.MaxUint64, 1 << 63, 1<<53 + 1, 1<<63 - 1, 0x7ffd1234abcd, uint64(1<<64 - 1000)}
	rng := rand.New(rand.NewSource(5))
	ts := int64(5e9) - 1500
	var lost uint64
	for k := 0; k < 2500; k++ {
		ts += int64(rng.Intn(4000))
		if k%97 == 13 {
			n := uint64(k + 1)
			if err := w.Lost(uint16(k%len(jsonlProbes)), uint16(k%3), ts, n); err != nil {
				t.Fatal(err)
			}
			lost += n
			continue
		}
		pi := uint16(rng.Intn(len(jsonlProbes)))
		nf := len(jsonlProbes[pi].Fields)
		e := format.Event{Time: ts, CPU: uint16(rng.Intn(8)), PID: uint32(100 + rng.Intn(3)), TID: uint32(200 + rng.Intn(9)), Probe: pi,
			Comm: []byte(comms[rng.Intn(len(comms))]), Ints: make([]uint64, nf), Strs: make([][]byte, nf)}
		for f := range nf {
			if jsonlProbes[pi].Fields[f].Type == format.String {
				e.Strs[f] = []byte(strs[rng.Intn(len(strs))])
				continue
			}
			e.Ints[f] = ints[rng.Intn(len(ints))]
			if rng.Intn(2) == 0 {
				e.Ints[f] = uint64(rng.Int63n(1<<40) - 1<<39)
			}
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, lost
}

// jsonlObject is one line of events --jsonl, its numbers as json.Number.
type jsonlObject struct {
	Time    json.Number            `json:"time"`
	Offset  json.Number            `json:"offset"`
	Wall    string                 `json:"wall"`
	CPU     json.Number            `json:"cpu"`
	PID     json.Number            `json:"pid"`
	TID     json.Number            `json:"tid"`
	Comm    *string                `json:"comm"`
	Probe   string                 `json:"probe"`
	Message *string                `json:"message"`
	Fields  map[string]interface{} `json:"fields"`
	Lost    json.Number            `json:"lost"`
	keys    []string
}

// parseJSONL parses every line of out as one JSON object, numbers kept
// as they are written (json.Decoder.UseNumber).
func parseJSONL(t *testing.T, out string) []jsonlObject {
	t.Helper()
	var objs []jsonlObject
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var o jsonlObject
		if err := d.Decode(&o); err != nil {
			t.Fatalf("line %d: %v: %s", len(objs)+1, err, line)
		}
		if d.More() {
			t.Fatalf("line %d holds more than one value: %s", len(objs)+1, line)
		}
		// The top-level keys, in order.
		kd := json.NewDecoder(bytes.NewReader(line))
		kd.UseNumber()
		kd.Token()
		for kd.More() {
			k, _ := kd.Token()
			o.keys = append(o.keys, k.(string))
			var skip json.RawMessage
			if err := kd.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		objs = append(objs, o)
	}
	return objs
}

// TestEventsJSONL checks events --jsonl against events and count: one
// JSON object per line; per probe as many event objects as count counts;
// each event's values, 64-bit integers exactly, as the text line shows
// them; the loss records with their counts; and, when jq is installed,
// that jq reads every line.
func TestEventsJSONL(t *testing.T) {
	path, lost := writeJSONLCapture(t)
	out, errOut, code := runCLI(t, "events", "--jsonl", path)
	if code != 0 {
		t.Fatalf("events --jsonl: exit %d: %s", code, errOut)
	}
	objs := parseJSONL(t, out)
	text, errOut, code := runCLI(t, "events", path)
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:]

	pointer := map[string]bool{}
	for _, p := range jsonlProbes {
		for _, f := range p.Fields {
			pointer[p.Name+"."+f.Name] = f.Pointer
		}
	}
	perProbe := map[string]uint64{}
	var gotLost uint64
	li := 0
	for k, o := range objs {
		if o.Lost != "" {
			if want := []string{"time", "offset", "cpu", "probe", "lost"}; strings.Join(o.keys, ",") != strings.Join(want, ",") {
				t.Errorf("loss record %d has keys %v, want %v", k, o.keys, want)
			}
			n, err := strconv.ParseUint(string(o.Lost), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			gotLost += n
			continue
		}
		if want := []string{"time", "offset", "cpu", "pid", "tid", "comm", "probe", "fields"}; strings.Join(o.keys, ",") != strings.Join(want, ",") {
			t.Errorf("event %d has keys %v, want %v", k, o.keys, want)
		}
		perProbe[o.Probe]++
		// The text line, rebuilt from the object as events prints it.
		pid, _ := strconv.ParseUint(string(o.PID), 10, 32)
		tid, _ := strconv.ParseUint(string(o.TID), 10, 32)
		want := fmt.Sprintf("%-14s %-7d %-7d %-15s %-16s ", o.Offset, pid, tid, textsafe.Escape(*o.Comm), o.Probe)
		var p *format.Probe
		for i := range jsonlProbes {
			if jsonlProbes[i].Name == o.Probe {
				p = &jsonlProbes[i]
			}
		}
		if p == nil || len(o.Fields) != len(p.Fields) {
			t.Fatalf("event %d: probe %q, fields %v", k, o.Probe, o.Fields)
		}
		for i, f := range p.Fields {
			if i > 0 {
				want += " "
			}
			want += f.Name + "="
			switch v := o.Fields[f.Name].(type) {
			case string:
				want += strconv.Quote(v)
			case json.Number:
				if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
					if _, err := strconv.ParseUint(string(v), 10, 64); err != nil {
						t.Fatalf("event %d: %s=%s is not a 64-bit integer", k, f.Name, v)
					}
				}
				if pointer[o.Probe+"."+f.Name] {
					u, err := strconv.ParseUint(string(v), 10, 64)
					if err != nil {
						t.Fatalf("event %d: address %s=%s: %v", k, f.Name, v, err)
					}
					want += "0x" + strconv.FormatUint(u, 16)
				} else {
					want += string(v)
				}
			default:
				t.Fatalf("event %d: %s is %T", k, f.Name, v)
			}
		}
		if li >= len(lines) {
			t.Fatalf("events --jsonl has more events than events' %d lines", len(lines))
		}
		if lines[li] != want {
			t.Errorf("event %d:\ntext  %q\njsonl %q", k, lines[li], want)
		}
		li++
	}
	if li != len(lines) {
		t.Errorf("events --jsonl has %d events, events %d lines", li, len(lines))
	}
	t.Logf("%d events %v, %d loss records", li, perProbe, len(objs)-li)
	if gotLost != lost || lost == 0 {
		t.Errorf("loss records count %d lost events, the capture %d", gotLost, lost)
	}

	// The counts per probe are count's.
	cj, errOut, code := runCLI(t, "count", "--json", path)
	if code != 0 {
		t.Fatalf("count: exit %d: %s", code, errOut)
	}
	var counts struct {
		Counts []struct {
			Probe string `json:"probe"`
			Count uint64 `json:"count"`
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(cj), &counts); err != nil {
		t.Fatalf("count --json: %v\n%s", err, cj)
	}
	want := map[string]uint64{}
	for _, c := range counts.Counts {
		want[c.Probe] = c.Count
	}
	if fmt.Sprint(perProbe) != fmt.Sprint(want) || len(want) != len(jsonlProbes) {
		t.Errorf("events --jsonl per probe %v, count %v", perProbe, want)
	}

	// A uint64 above 2^53 is written exactly, as a number.
	if !strings.Contains(out, `"u":18446744073709551615`) || !strings.Contains(out, `"u":9007199254740993`) {
		t.Errorf("events --jsonl lacks the exact uint64 values")
	}
	// Invisible format characters are escaped, not written raw.
	if strings.Contains(out, "\u202e") || !strings.Contains(out, `\u202e`) {
		t.Errorf("events --jsonl writes U+202E raw or not at all")
	}

	if jq, err := exec.LookPath("jq"); err == nil {
		cmd := exec.Command(jq, "-r", "if .lost then \"lost \\(.lost > 0)\" else .probe end")
		cmd.Stdin = strings.NewReader(out)
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("jq: %v", err)
		}
		jqProbes := map[string]uint64{}
		for _, l := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
			jqProbes[l]++
		}
		lostLines := jqProbes["lost true"]
		delete(jqProbes, "lost true")
		if fmt.Sprint(jqProbes) != fmt.Sprint(want) || lostLines != uint64(len(objs)-li) {
			t.Errorf("jq reads %v and %d loss records; want %v and %d", jqProbes, lostLines, want, len(objs)-li)
		}
	} else {
		t.Log("jq is not installed: not piping through it")
	}
}

// TestEventsJSONLOptions checks --time wall and none, -f's message, probe
// selection, -n and the row filters with --jsonl.
func TestEventsJSONLOptions(t *testing.T) {
	path, _ := writeJSONLCapture(t)
	out, errOut, code := runCLI(t, "events", "--jsonl", "--time", "wall", "-n", "5", path, "tp")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text, _, _ := runCLI(t, "events", "--time", "wall", "-n", "5", path, "tp")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:]
	var events int
	for _, o := range parseJSONL(t, out) {
		if o.Probe != "tp" || o.Wall == "" || o.Offset != "" {
			t.Errorf("--time wall, probe tp: %+v", o)
		}
		if o.Lost != "" {
			continue
		}
		if !strings.HasPrefix(lines[events], o.Wall+" ") {
			t.Errorf("wall %q, text line %q", o.Wall, lines[events])
		}
		events++
		// A field named like the event's keys stays in fields.
		if _, ok := o.Fields["pid"].(json.Number); !ok {
			t.Errorf("tp's pid field: %v", o.Fields["pid"])
		}
		if _, ok := o.Fields["comm"].(string); !ok {
			t.Errorf("tp's comm field: %v", o.Fields["comm"])
		}
	}
	if events != 5 {
		t.Errorf("-n 5: %d events", events)
	}

	out, errOut, code = runCLI(t, "events", "--jsonl", "--time", "none", "--tid", "201,203", path, "-f", `str "n=%d s=%s p=%p", n, s, p`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text, _, _ = runCLI(t, "events", "--time", "none", "--tid", "201,203", path, "-f", `str "n=%d s=%s p=%p", n, s, p`)
	lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:]
	events = 0
	for _, o := range parseJSONL(t, out) {
		if o.Offset != "" || o.Wall != "" || o.Probe != "str" {
			t.Errorf("--time none -f str: %+v", o)
		}
		if o.Lost != "" {
			continue
		}
		if o.TID != "201" && o.TID != "203" {
			t.Errorf("--tid 201,203: tid %s", o.TID)
		}
		if o.Message == nil || !strings.HasSuffix(lines[events], " "+*o.Message) {
			t.Errorf("message %v, text line %q", o.Message, lines[events])
		}
		events++
	}
	if events != len(lines) || events == 0 {
		t.Errorf("%d JSON events, %d text lines", events, len(lines))
	}
}
