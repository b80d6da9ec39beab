package report

import (
	"sort"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
)

// DefaultMaxAutoLatencies bounds the latency sections of the pairs a
// report finds by itself (Options.MaxAutoLatencies): each is a pass's
// worth of pairing and a heat map.
const DefaultMaxAutoLatencies = 8

// returnSuffix ends the name the recorder gives a return probe
// (uretprobe, kretprobe, fexit) recorded without NAME=: its function's
// name and this.
const returnSuffix = ":return"

// Pairs finds the entry/return pairs of a capture's probes whose latency a
// report shows when not asked for any, in the order of the entry probes:
//
//   - a uprobe and a uretprobe, a kprobe and a kretprobe, or a fentry and
//     a fexit on the same function: the same symbol (of the probe's spec)
//     in the same target (Probe.Target, the binary or kernel module). A
//     kprobe at an offset into its function is no entry. When a function
//     has several entry or return probes, the first without a filter
//     pairs, or else the first;
//   - then, of the probes not paired so, a probe X and a probe X:return
//     (the names the recorder gives a function's probes without NAME=),
//     unless both are probes of functions and not of the same one.
//
// Each probe is in one pair at most.
func Pairs(m *format.Meta) []LatencySpec {
	type pair struct{ entry, ret int }
	var pairs []pair
	used := make([]bool, len(m.Probes))
	keys := make([]funcKey, len(m.Probes))
	// The pairs of a function's probes: its first entry and return probe,
	// those without a filter first.
	type ends struct{ entry, ret int }
	byFunc := map[funcKey]*ends{}
	var order []funcKey
	better := func(cur, i int) bool {
		return cur < 0 || m.Probes[cur].Filter != "" && m.Probes[i].Filter == ""
	}
	for i := range m.Probes {
		k, ret, ok := probeFunc(&m.Probes[i])
		if !ok {
			continue
		}
		keys[i] = k
		e := byFunc[k]
		if e == nil {
			e = &ends{entry: -1, ret: -1}
			byFunc[k] = e
			order = append(order, k)
		}
		switch {
		case ret && better(e.ret, i):
			e.ret = i
		case !ret && better(e.entry, i):
			e.entry = i
		}
	}
	for _, k := range order {
		if e := byFunc[k]; e.entry >= 0 && e.ret >= 0 {
			pairs = append(pairs, pair{e.entry, e.ret})
			used[e.entry], used[e.ret] = true, true
		}
	}
	index := make(map[string]int, len(m.Probes))
	for i := range m.Probes {
		index[m.Probes[i].Name] = i
	}
	for i := range m.Probes {
		j, ok := index[m.Probes[i].Name+returnSuffix]
		if !ok || used[i] || used[j] || i == j {
			continue
		}
		if ki, kj := keys[i], keys[j]; ki.family != "" && kj.family != "" && ki != kj {
			continue // two functions' probes
		}
		pairs = append(pairs, pair{i, j})
		used[i], used[j] = true, true
	}
	sort.SliceStable(pairs, func(a, b int) bool { return pairs[a].entry < pairs[b].entry })
	out := make([]LatencySpec, len(pairs))
	for i, p := range pairs {
		out[i] = LatencySpec{Entry: m.Probes[p.entry].Name, Return: m.Probes[p.ret].Name}
	}
	return out
}

// funcKey is the function a probe is on: the family of its kind ("u" for
// uprobes and uretprobes, "k" for kprobes and kretprobes, "f" for fentry
// and fexit), its target and its symbol. The zero funcKey is no function.
type funcKey struct{ family, target, symbol string }

// probeFunc returns the function p is on and whether p is its return
// probe; ok is false for other kinds of probes, a probe at an offset into
// its function, a pattern, and a spec that does not parse as p's kind.
func probeFunc(p *format.Probe) (k funcKey, ret, ok bool) {
	switch p.Kind {
	case "uprobe":
		k.family = "u"
	case "uretprobe":
		k.family, ret = "u", true
	case "kprobe":
		k.family = "k"
	case "kretprobe":
		k.family, ret = "k", true
	case "fentry":
		k.family = "f"
	case "fexit":
		k.family, ret = "f", true
	default:
		return funcKey{}, false, false
	}
	s, err := probespec.Parse(p.Spec)
	if err != nil || s.Kind.String() != p.Kind || s.Symbol == "" || s.Offset != 0 || s.Wildcard() || strings.ContainsRune(s.Symbol, '+') {
		return funcKey{}, false, false
	}
	k.target, k.symbol = p.Target, s.Symbol
	if k.target == "" {
		k.target = s.Binary
	}
	return k, ret, true
}
