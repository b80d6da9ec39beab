package format

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/outfile"
)

// HostField is the field Merge adds to every probe of a merged capture: the
// host each event was recorded on, from its input's Meta.Host. It is an
// ordinary string field, so every reader and verb sees it ("hist --by host").
const HostField = "host"

// HostFieldIndex returns the index in p's fields of the host field a
// merge added, or -1: only a merged capture (one with Inputs) has one, and
// a field a probe recorded under that name (a parameter called host) is
// not it.
func (m *Meta) HostFieldIndex(p *Probe) int {
	if len(m.Inputs) == 0 {
		return -1
	}
	if fi := p.Field(HostField); fi >= 0 && p.Fields[fi].Type == String {
		return fi
	}
	return -1
}

// MergeOptions describe the merged capture; Writer.Compression defaults to
// the first input's.
type MergeOptions struct {
	Writer      WriterOptions
	Tool        string
	CommandLine []string
	// Force replaces an existing output file (see package outfile).
	Force bool
	// Progress, if set, is told after each batch Merge reads how many of
	// the inputs' batches it has read.
	Progress func(read, of int)
}

// batchProgress counts the batches a merge has read, of, for its
// Progress (nil: none).
type batchProgress struct {
	fn       func(read, of int)
	read, of int
}

func (p *batchProgress) add() {
	if p.fn != nil {
		p.read++
		p.fn(p.read, p.of)
	}
}

// MergeResult says what Merge wrote.
type MergeResult struct {
	Meta        *Meta
	Events      uint64
	LossRecords uint64
	Lost        uint64
	// Recovered lists the inputs that had no footer (read up to their last complete batch).
	Recovered []string
	// Relabeled says, a line an input, which inputs' events carry a host
	// other than their Meta.Host: the second and later machines (or
	// boots) of one host name (see hostLabels); and which process ids
	// have stacks on more than one host (sharedPIDs).
	Relabeled []string
}

// mergeIn is one input of a merge: its meta, where its probes and fields
// go, and how far its times move.
type mergeIn struct {
	path   string
	meta   *Meta
	merged bool   // a merged capture: events carry their host
	label  string // the host its events carry (hostLabels); a merged input's hosts
	// relabel maps a merged input's host values to the hosts they carry
	// in the merge (hostLabels).
	relabel map[string]string
	shift   int64       // ns added to its times
	stacks  *StackTable // its stack table, until merged into the merge's
	probes  []int       // merged probe of each of its probes
	fields  [][]int     // merged field of each field of each probe; -1 for its host field
	hostFI  []int       // index of each probe's host field, -1 if none
}

// Merge writes the events and loss records of several captures (hosts, or
// rotated parts) into one capture at out, with a "host" field on every
// probe and probes of equal name, kind, spec and fields unified, so that
// every verb sees the fleet at once (and "--by host" splits it). Times move
// onto the boot clock of the input that started first, events are grouped by
// host because pairing verbs key threads by tid, and Meta.Inputs keeps the
// inputs' metas.
func Merge(out string, inputs []string, o MergeOptions) (res *MergeResult, err error) {
	if len(inputs) == 0 {
		return nil, errors.New("nothing to merge")
	}
	dest := outfile.Options{Force: o.Force, Inputs: inputs}
	if _, err := outfile.Check(out, dest); err != nil {
		return nil, err
	}
	ins := make([]*mergeIn, len(inputs))
	// The inputs' stack tables, united: stack ids are hashes of the
	// frames, the same in every capture (StackID). The united table must
	// be within a reader's limits too, as each input's is.
	stacks := new(StackTable)
	var count stackCount
	prog := &batchProgress{fn: o.Progress}
	for i, path := range inputs {
		r, err := Open(path)
		if err != nil {
			return nil, err
		}
		prog.of += r.NumBatches()
		ins[i] = &mergeIn{path: path, meta: r.Meta, merged: len(r.Meta.Inputs) > 0}
		t, err := r.StackTable()
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ins[i].stacks = t
	}
	relabeled := hostLabels(ins)
	pidHosts := map[uint32]map[string]bool{} // hosts of each pid with mappings
	var objects objectIDs
	for _, in := range ins {
		if !in.merged {
			for _, m := range in.stacks.Maps {
				if pidHosts[m.PID] == nil {
					pidHosts[m.PID] = map[string]bool{}
				}
				pidHosts[m.PID][in.label] = true
			}
		}
		had := stacks.lengths()
		if stacks.Empty() {
			stacks = in.stacks // the reader's, which Add would copy
			objects.first(stacks, in.label)
		} else {
			objects.renumber(in.stacks, in.label)
			stacks.Add(in.stacks)
		}
		in.stacks = nil
		if err := count.since(stacks, had); err != nil {
			return nil, fmt.Errorf("%s: merged stack table: %w", in.path, err)
		}
	}
	relabeled = append(relabeled, sharedPIDs(pidHosts)...)
	meta, err := mergeMeta(ins, o)
	if err != nil {
		return nil, err
	}
	if o.Writer.Compression == "" {
		o.Writer.Compression = Compression(ins[0].meta.Compression)
		if _, err := ParseCompression(string(o.Writer.Compression)); err != nil {
			o.Writer.Compression = Zstd
		}
	}
	f, err := outfile.Create(out, dest)
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(f, meta, o.Writer)
	if err != nil {
		f.Discard()
		return nil, err
	}
	w.addOwnStacks(stacks) // the whole table, and the only copy
	res = &MergeResult{Meta: meta, Relabeled: relabeled}
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", out, cerr)
		}
		if err != nil {
			f.Discard()
		} else {
			err = f.Commit()
		}
	}()
	// Hosts in order of first appearance; each host's inputs in time order.
	var hosts []string
	byHost := map[string][]*mergeIn{}
	for _, in := range ins {
		h := in.label
		if byHost[h] == nil {
			hosts = append(hosts, h)
		}
		byHost[h] = append(byHost[h], in)
	}
	for _, h := range hosts {
		if err := mergeGroup(w, byHost[h], meta, res, prog); err != nil {
			return res, err
		}
	}
	return res, nil
}

// bootEpoch is when the capture's machine booted, on the wall clock.
func bootEpoch(m *Meta) int64 { return m.StartWall.UnixNano() - m.StartBoot }

// bootSlack is how close two boot epochs must be to be one boot: reading
// the two clocks at the start of each capture differs by far less.
const bootSlack = int64(time.Second)

// oneBoot reports whether two captures were recorded in one boot of one
// machine: the same host name and boot id, or, when either has no boot id
// (recorded before bpftape kept it, or redacted), boot epochs within
// bootSlack.
func oneBoot(a, b *Meta) bool {
	if a.Host != b.Host {
		return false
	}
	if ia, ib := a.Extra[ExtraBootID], b.Extra[ExtraBootID]; ia != "" && ib != "" {
		return ia == ib
	}
	return abs(bootEpoch(a)-bootEpoch(b)) < bootSlack
}

// extraMergeHost is the Extra key of an input's meta in a merged capture's
// Inputs: the host its events carry.
const extraMergeHost = "merge.host"

// hostLabels sets the host each input's events carry. A thread id means
// nothing across machines or boots, and the pairing verbs key threads by
// host and thread, so each boot of a machine needs its own host: the first
// boot of a host name keeps the name, another machine (or boot) of that
// name is NAME#2, NAME#3... A merged input's boots (its Inputs, each with
// the host its events carry) are labeled the same way, its host column
// rewritten where a label changes (mergeIn.relabel), so that one boot is
// one host over merges of merges, and two boots are two. It returns a note
// for each input relabeled.
func hostLabels(ins []*mergeIn) (notes []string) {
	type boot struct {
		meta  *Meta
		label string
		path  string
	}
	var boots []boot
	taken := map[string]bool{}
	// label returns the host that the events of m's boot carry, given
	// old, the one they carried (m's name, or its label in a merged
	// input): that of the same boot met before, else old if no other
	// boot has it, else the next free NAME#N.
	label := func(m *Meta, old, path string) string {
		for _, b := range boots {
			if oneBoot(b.meta, m) {
				return b.label
			}
		}
		l := old
		if taken[l] {
			first := ""
			for _, b := range boots {
				if b.label == l {
					first = b.path
					break
				}
			}
			base := m.Host
			if base == "" {
				base = "host"
			}
			for n := 2; taken[l]; n++ {
				l = base + "#" + strconv.Itoa(n)
			}
			notes = append(notes, fmt.Sprintf("%s and %s were recorded on two machines named %q, or in two boots of one: the events from %s carry host %q, so that their threads are not paired", first, path, m.Host, path, l))
		}
		taken[l] = true
		return l
	}
	for _, in := range ins {
		if !in.merged {
			in.label = label(in.meta, in.meta.Host, in.path)
			boots = append(boots, boot{in.meta, in.label, in.path})
			continue
		}
		in.relabel = map[string]string{}
		var walk func(m *Meta)
		walk = func(m *Meta) {
			if len(m.Inputs) > 0 {
				for i := range m.Inputs {
					walk(&m.Inputs[i])
				}
				return
			}
			old, ok := m.Extra[extraMergeHost]
			if !ok {
				old = m.Host
			}
			l, done := in.relabel[old] // another part of that boot
			if !done {
				l = label(m, old, in.path)
				in.relabel[old] = l
			}
			if m.Extra == nil {
				m.Extra = map[string]string{}
			}
			m.Extra[extraMergeHost] = l // for the next merge
			boots = append(boots, boot{m, l, in.path})
		}
		walk(in.meta)
		hosts := strings.Split(in.meta.Host, ",")
		for i, h := range hosts {
			if l, ok := in.relabel[h]; ok {
				hosts[i] = l
			}
		}
		in.label = strings.Join(hosts, ",")
	}
	return notes
}

// probeKey is what makes probes of several inputs one probe: the name
// (before any renaming), kind, spec and fields other than host.
func probeKey(p *Probe, name string, skipHost bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s", name, p.Kind, p.Spec)
	for _, f := range p.Fields {
		if skipHost && f.Name == HostField {
			continue
		}
		fmt.Fprintf(&b, "\x00%s:%s", f.Name, f.Type)
	}
	return b.String()
}

// mergeMeta builds the merged probe table and meta, and each input's maps.
func mergeMeta(ins []*mergeIn, o MergeOptions) (*Meta, error) {
	// The reference clock is that of the input that started first.
	ref := ins[0]
	for _, in := range ins {
		if in.meta.StartWall.Before(ref.meta.StartWall) {
			ref = in
		}
	}
	// Boot groups: inputs of one boot of one machine (oneBoot with the
	// group's first) share its boot clock. Another boot's times shift by
	// the difference of the boot times on the wall clock, so that WallTime
	// stays right and durations within an input exact.
	boots := []*Meta{ref.meta}
	for _, in := range ins {
		found := false
		for _, b := range boots {
			if oneBoot(b, in.meta) {
				in.shift, found = bootEpoch(b)-bootEpoch(boots[0]), true
				break
			}
		}
		if !found {
			boots = append(boots, in.meta)
			in.shift = bootEpoch(in.meta) - bootEpoch(boots[0])
		}
	}

	m := &Meta{
		Tool: o.Tool, CommandLine: o.CommandLine,
		StartWall: ref.meta.StartWall, StartBoot: ref.meta.StartBoot,
		Extra: map[string]string{},
	}
	var hosts, kernels []string
	keys := map[string]int{}
	names := map[string]bool{}
	type origin struct{ targets, buildIDs []string }
	var origins []origin
	for _, in := range ins {
		hosts = appendNew(hosts, strings.Split(in.label, ",")...)
		kernels = appendNew(kernels, strings.Split(in.meta.Kernel, ",")...)
		in.merged = len(in.meta.Inputs) > 0
		for pi := range in.meta.Probes {
			p := &in.meta.Probes[pi]
			hostFI := -1
			if hi := p.Field(HostField); hi >= 0 {
				if !in.merged || p.Fields[hi].Type != String {
					return nil, fmt.Errorf("%s: probe %s already has a field named %q: merge cannot add its host", in.path, p.Name, HostField)
				}
				hostFI = hi
			}
			// A probe a merge renamed NAME@HOST is still NAME.
			name, renameHost := p.Name, in.label
			if i := strings.LastIndexByte(name, '@'); in.merged && i > 0 && slices.Contains(strings.Split(in.meta.Host, ","), name[i+1:]) {
				name, renameHost = name[:i], name[i+1:]
				if l, ok := in.relabel[renameHost]; ok {
					renameHost = l
				}
			}
			// Equal probes are one; a different probe whose name is taken
			// becomes NAME@HOST (after the first host that has it), or NAME#N.
			// Build ids and targets that differ are listed, comma-separated.
			key := probeKey(p, name, in.merged)
			mi, ok := keys[key]
			if !ok {
				mp := Probe{Name: name, Kind: p.Kind, Spec: p.Spec, Target: p.Target, BuildID: p.BuildID}
				for fi, f := range p.Fields {
					if fi != hostFI {
						mp.Fields = append(mp.Fields, Field{Name: f.Name, Type: f.Type, Pointer: f.Pointer})
					}
				}
				mp.Fields = append(mp.Fields, Field{Name: HostField, Type: String})
				if names[mp.Name] {
					mp.Name = name + "@" + renameHost
					for n := 2; names[mp.Name]; n++ {
						mp.Name = name + "#" + strconv.Itoa(n)
					}
				}
				names[mp.Name] = true
				mi = len(m.Probes)
				keys[key] = mi
				m.Probes = append(m.Probes, mp)
				origins = append(origins, origin{})
			}
			og := &origins[mi]
			og.targets = appendNew(og.targets, strings.Split(p.Target, ",")...)
			og.buildIDs = appendNew(og.buildIDs, strings.Split(p.BuildID, ",")...)
			in.probes = append(in.probes, mi)
			in.hostFI = append(in.hostFI, hostFI)
			var fmap []int
			next := 0
			for fi := range p.Fields {
				if fi == hostFI {
					fmap = append(fmap, -1)
					continue
				}
				fmap = append(fmap, next)
				next++
			}
			in.fields = append(in.fields, fmap)
		}
		im := *in.meta
		im.Extra = map[string]string{}
		for k, v := range in.meta.Extra {
			im.Extra[k] = v
		}
		im.Extra["merge.file"] = in.path
		im.Extra["merge.time_shift_ns"] = strconv.FormatInt(in.shift, 10)
		if !in.merged {
			im.Extra[extraMergeHost] = in.label
		}
		m.Inputs = append(m.Inputs, im)
	}
	for i := range m.Probes {
		m.Probes[i].Target = strings.Join(origins[i].targets, ",")
		m.Probes[i].BuildID = strings.Join(origins[i].buildIDs, ",")
	}
	if len(m.Probes) > MaxProbes {
		return nil, fmt.Errorf("merged capture would have %d probes: at most %d", len(m.Probes), MaxProbes)
	}
	m.Host = strings.Join(hosts, ",")
	m.Kernel = strings.Join(kernels, ",")
	m.Extra["merged"] = humanfmt.Plural(uint64(len(ins)), "capture", "captures") + " from " + humanfmt.Plural(uint64(len(hosts)), "host", "hosts")
	if len(boots) > 1 {
		m.Extra["time_base"] = fmt.Sprintf("boot clock of %s; %d other boots shifted onto it by their boot times (inputs' merge.time_shift_ns)", ref.meta.Host, len(boots)-1)
	}
	return m, nil
}

func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if v == "" {
			continue
		}
		found := false
		for _, x := range list {
			found = found || x == v
		}
		if !found {
			list = append(list, v)
		}
	}
	return list
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// cursor walks one input's rows.
type cursor struct {
	in   *mergeIn
	r    *Reader
	b    *Batch
	i    int
	cols [][]int // schema column of each field of each probe
	prog *batchProgress
}

func (c *cursor) advance() (bool, error) {
	c.i++
	for c.b == nil || c.i >= c.b.Len {
		if !c.r.Next() {
			return false, c.r.Err()
		}
		c.prog.add()
		c.b, c.i = c.r.Batch(), 0
	}
	return true, nil
}

func (c *cursor) time() int64 { return c.b.Time[c.i] + c.in.shift }

// mergeGroup writes the rows of one host's inputs, merged by time.
func mergeGroup(w *Writer, ins []*mergeIn, m *Meta, res *MergeResult, prog *batchProgress) error {
	var live []*cursor
	defer func() {
		for _, c := range live {
			c.r.Close()
		}
	}()
	for _, in := range ins {
		r, err := Open(in.path)
		if err != nil {
			return err
		}
		c := &cursor{in: in, r: r, i: -1, prog: prog}
		live = append(live, c)
		for _, p := range r.Meta.Probes {
			var cols []int
			for _, f := range p.Fields {
				cols = append(cols, r.Column(f.Column))
			}
			c.cols = append(c.cols, cols)
		}
	}
	active := make([]*cursor, 0, len(live))
	for _, c := range live {
		ok, err := c.advance()
		if err != nil {
			return fmt.Errorf("%s: %w", c.in.path, err)
		}
		if ok {
			active = append(active, c)
		} else if c.r.Recovered {
			res.Recovered = append(res.Recovered, c.in.path)
		}
	}
	ev := Event{}
	for len(active) > 0 {
		k := 0
		for j := 1; j < len(active); j++ {
			if active[j].time() < active[k].time() {
				k = j
			}
		}
		c := active[k]
		b, i := c.b, c.i
		pi := b.Probe[i]
		mp := uint16(c.in.probes[pi])
		if n, ok := b.Lost(i); ok {
			if err := w.Lost(mp, b.CPU[i], c.time(), n); err != nil {
				return err
			}
			res.LossRecords++
			res.Lost = AddCount(res.Lost, n)
		} else {
			nf := len(m.Probes[mp].Fields)
			ev.Ints = append(ev.Ints[:0], make([]uint64, nf)...)
			ev.Strs = append(ev.Strs[:0], make([][]byte, nf)...)
			ev.Time, ev.CPU, ev.PID, ev.TID, ev.Probe = c.time(), b.CPU[i], b.PID[i], b.TID[i], mp
			ev.Comm = []byte(b.Comm(i))
			ev.Strs[nf-1] = []byte(c.in.label)
			for fi, ci := range c.cols[pi] {
				col := b.Col(ci)
				to := c.in.fields[pi][fi]
				host := to < 0 // a merged input's host field
				if host {
					to = nf - 1
				}
				if col.Type == String {
					v := col.Str(i)
					if l, ok := c.in.relabel[v]; ok && host {
						v = l // relabeled (hostLabels)
					}
					ev.Strs[to] = []byte(v)
				} else {
					ev.Ints[to] = uint64(col.Int(i))
				}
			}
			if err := w.Append(&ev); err != nil {
				return err
			}
			res.Events++
		}
		ok, err := c.advance()
		if err != nil {
			return fmt.Errorf("%s: %w", c.in.path, err)
		}
		if !ok {
			if c.r.Recovered {
				res.Recovered = append(res.Recovered, c.in.path)
			}
			active = append(active[:k], active[k+1:]...)
		}
	}
	return nil
}

// objectIDs numbers the objects of a merge's stack table. Ids are each
// capture's own (the recorder numbers the objects it meets from 1), so
// two captures' object 1 may be two binaries: each input's objects get
// the id the merge has for the same object, or a new one, and its
// mappings and symbols follow. The same object is one with the same
// path, kind and build id (without a build id, of the same host: rotated
// parts of one recording) and the same place among those of its table
// (in id order), for a table may hold two objects of one path and no
// build id (two containers' /app, a binary rebuilt), which the recorder
// told apart by their files, and a recording's parts list its objects in
// the same order.
type objectIDs struct {
	ids  map[objectKey]uint32
	last uint32
}

type objectKey struct {
	path, buildID, host string // host only without a build id
	kernel              bool
	nth                 int // among the table's objects of this key, by id
}

// keys returns the key of each object of t, an input's table from host.
func keys(t *StackTable, host string) []objectKey {
	order := make([]int, len(t.Objects))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.Objects[a].ID, t.Objects[b].ID) })
	seen := map[objectKey]int{}
	out := make([]objectKey, len(t.Objects))
	for _, i := range order {
		o := &t.Objects[i]
		k := objectKey{path: o.Path, buildID: o.BuildID, kernel: o.Kernel}
		if o.BuildID == "" {
			k.host = host
		}
		n := seen[k]
		seen[k] = n + 1
		k.nth = n
		out[i] = k
	}
	return out
}

// first takes the objects of the first input's table t as they are.
func (n *objectIDs) first(t *StackTable, host string) {
	n.ids = map[objectKey]uint32{}
	for i, k := range keys(t, host) {
		if _, ok := n.ids[k]; !ok {
			n.ids[k] = t.Objects[i].ID
		}
		n.last = max(n.last, t.Objects[i].ID)
	}
}

// renumber gives the objects of t, a later input's table from host, the
// merge's ids.
func (n *objectIDs) renumber(t *StackTable, host string) {
	ids := make(map[uint32]uint32, len(t.Objects))
	for i, k := range keys(t, host) {
		o := &t.Objects[i]
		id, ok := n.ids[k]
		if !ok {
			n.last++
			id = n.last
			n.ids[k] = id
		}
		ids[o.ID] = id
		o.ID = id
	}
	// An entry of an object t does not list keeps no id of another's.
	other := func(id uint32) uint32 {
		if n, ok := ids[id]; ok {
			return n
		}
		return math.MaxUint32
	}
	for i := range t.Maps {
		t.Maps[i].Object = other(t.Maps[i].Object)
	}
	for i := range t.Symbols {
		t.Symbols[i].Object = other(t.Symbols[i].Object)
	}
	t.index = nil
}

// sharedPIDs says which process ids have mappings in the stack tables of
// inputs of more than one host (by the hosts of pidHosts): mappings are
// found by pid, so where two such processes mapped one address, a frame
// of either may be named after the other's object.
func sharedPIDs(pidHosts map[uint32]map[string]bool) []string {
	var pids []uint32
	hosts := map[string]bool{}
	for pid, hs := range pidHosts {
		if len(hs) > 1 {
			pids = append(pids, pid)
			for h := range hs {
				hosts[h] = true
			}
		}
	}
	if len(pids) == 0 {
		return nil
	}
	slices.Sort(pids)
	list := make([]string, 0, 5)
	for _, pid := range pids[:min(len(pids), 5)] {
		list = append(list, strconv.FormatUint(uint64(pid), 10))
	}
	if len(pids) > 5 {
		list = append(list, fmt.Sprintf("and %d more", len(pids)-5))
	}
	names := slices.Sorted(maps.Keys(hosts))
	return []string{fmt.Sprintf("stacks: process ids %s were taken on hosts %s; where two processes of one id mapped one address, a frame of either may be named after the other's binary",
		strings.Join(list, ", "), strings.Join(names, ", "))}
}
