package format

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMergeOneHostNameTwoBoots merges captures of two machines named
// alike (unnamed VM guests are all "(none)"), and parts of one boot: each
// boot is a host of its own, the parts of one boot one host, over a merge
// of merges too.
func TestMergeOneHostNameTwoBoots(t *testing.T) {
	dir := t.TempDir()
	meta := func(bootID string, wall time.Duration, boot int64) *Meta {
		m := testMeta()
		m.Host = "(none)"
		m.StartWall = m.StartWall.Add(wall)
		m.StartBoot = boot
		if bootID != "" {
			m.Extra = map[string]string{ExtraBootID: bootID}
		}
		return m
	}
	write := func(name string, m *Meta, seed int64) string {
		path := filepath.Join(dir, name)
		writeInput(t, path, m, seed, 200)
		return path
	}
	// a and b ran at once on two machines; a2 is a later part of a's boot,
	// whose wall clock was stepped 5 s since (its boot epoch moved, its
	// boot id did not); c has no boot id, in a's boot by its epoch; d has
	// none either, another boot by its epoch.
	a := write("a.arrow", meta("id-a", 0, 1e9), 1)
	b := write("b.arrow", meta("id-b", 500*time.Millisecond, 50e9), 2)
	a2 := write("a2.arrow", meta("id-a", 65*time.Second, 61e9), 3)
	c := write("c.arrow", meta("", 20*time.Second, 21e9), 4)
	d := write("d.arrow", meta("", 30*time.Second, 2e9), 5)

	hostsOf := func(path string) map[string]int {
		_, rows := readMerged(t, path)
		hosts := map[string]int{}
		for _, r := range rows {
			if r.lost == 0 {
				hosts[r.host]++
			}
		}
		return hosts
	}
	out := filepath.Join(dir, "m.arrow")
	res, err := Merge(out, []string{a, b, a2, c, d}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 196 events an input (a loss record every 50 rows).
	want := map[string]int{"(none)": 3 * 196, "(none)#2": 196, "(none)#3": 196}
	if got := hostsOf(out); !sameMap(got, want) {
		t.Errorf("events by host %v, want %v", got, want)
	}
	if res.Meta.Host != "(none),(none)#2,(none)#3" || res.Meta.Extra["merged"] != "5 captures from 3 hosts" {
		t.Errorf("merged host %q, %q", res.Meta.Host, res.Meta.Extra["merged"])
	}
	if len(res.Relabeled) != 2 || !strings.Contains(res.Relabeled[0], `the events from `+b+` carry host "(none)#2"`) {
		t.Errorf("notes %q", res.Relabeled)
	}
	// a2's times stay on a's boot clock, stepped wall clock or not.
	if s := res.Meta.Inputs[2].Extra["merge.time_shift_ns"]; s != "0" {
		t.Errorf("a2 shifted by %s ns", s)
	}
	var labels []string
	for _, in := range res.Meta.Inputs {
		labels = append(labels, in.Extra[extraMergeHost])
	}
	if !slices.Equal(labels, []string{"(none)", "(none)#2", "(none)", "(none)", "(none)#3"}) {
		t.Errorf("inputs' hosts %q", labels)
	}

	// A later part of b's boot, merged into the merged capture, is b's
	// host; a new boot takes the next free name.
	b2 := write("b2.arrow", meta("id-b", 90*time.Second, 140e9), 6)
	e := write("e.arrow", meta("id-e", 10*time.Second, 3e9), 7)
	out2 := filepath.Join(dir, "m2.arrow")
	res2, err := Merge(out2, []string{out, b2, e}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want["(none)#2"] += 196
	want["(none)#4"] = 196
	if got := hostsOf(out2); !sameMap(got, want) {
		t.Errorf("merge of merges: events by host %v, want %v", got, want)
	}
	if len(res2.Relabeled) != 1 || !strings.Contains(res2.Relabeled[0], `carry host "(none)#4"`) {
		t.Errorf("merge of merges: notes %q", res2.Relabeled)
	}

	// Two merges, each of its own: X of a and b, Y of a later part of b's
	// boot and of c, another boot. Alone, Y calls b's boot "(none)" and
	// c's "(none)#2"; merged with X, b's boot is X's "(none)#2" and c's a
	// new "(none)#3", Y's host column rewritten.
	c3 := write("c3.arrow", meta("id-c", 40*time.Second, 9e9), 8)
	x, y := filepath.Join(dir, "x.arrow"), filepath.Join(dir, "y.arrow")
	if _, err := Merge(x, []string{a, b}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(y, []string{b2, c3}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := hostsOf(y), map[string]int{"(none)": 196, "(none)#2": 196}; !sameMap(got, want) {
		t.Errorf("y: events by host %v, want %v", got, want)
	}
	xy := filepath.Join(dir, "xy.arrow")
	res3, err := Merge(xy, []string{x, y}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hostsOf(xy), map[string]int{"(none)": 196, "(none)#2": 2 * 196, "(none)#3": 196}; !sameMap(got, want) {
		t.Errorf("x and y: events by host %v, want %v", got, want)
	}
	if res3.Meta.Host != "(none),(none)#2,(none)#3" || len(res3.Relabeled) != 1 || !strings.Contains(res3.Relabeled[0], `the events from `+y+` carry host "(none)#3"`) {
		t.Errorf("x and y: host %q, notes %q", res3.Meta.Host, res3.Relabeled)
	}
	// And merged again with a part of c's boot: one host with c3's.
	c4 := write("c4.arrow", meta("id-c", 50*time.Second, 19e9), 9)
	xyc := filepath.Join(dir, "xyc.arrow")
	if _, err := Merge(xyc, []string{xy, c4}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := hostsOf(xyc), map[string]int{"(none)": 196, "(none)#2": 2 * 196, "(none)#3": 2 * 196}; !sameMap(got, want) {
		t.Errorf("then c's boot again: events by host %v, want %v", got, want)
	}
}
