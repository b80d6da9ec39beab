package replay

import "github.com/bpftape/bpftape/format"

// The columns each analysis reads, for ScanColumns: a pass decodes those
// and no others, so an analysis that forgets one finds it empty (the
// DecodeAll tests compare every verb's output with every column decoded).

// columns returns the columns of threadKeys: the tid, and a merged
// capture's host fields.
func (k *threadKeys) columns() []int {
	cols := []int{format.ColTID}
	for _, c := range k.cols {
		if c >= 0 {
			cols = append(cols, c)
		}
	}
	return cols
}

// columns returns the key fields' columns and the host fields'.
func (k *pairKeys) columns() []int {
	cols := k.threads.columns()
	for _, refs := range k.refs {
		for j := range refs {
			cols = append(cols, refs[j].col)
		}
	}
	return cols
}

// byColumns returns the column of a --by key: comm, pid, tid or a field.
func byColumns(by string, byRef *Ref) []int {
	switch by {
	case "":
		return nil
	case "comm":
		return []int{format.ColComm}
	case "pid":
		return []int{format.ColPID}
	case "tid":
		return []int{format.ColTID}
	}
	if byRef != nil {
		return []int{byRef.col}
	}
	return nil
}

// Columns returns the columns Add reads.
func (l *Latencies) Columns() []int {
	cols := append([]int{format.ColTime}, l.pair.Columns()...)
	return append(cols, byColumns(l.o.By, l.byRef)...)
}

// Columns returns the columns Add reads.
func (r *RequestTotals) Columns() []int {
	cols := append([]int{r.item.col, r.end.col}, r.threads.columns()...)
	if r.keys != nil {
		cols = append(cols, r.keys.columns()...)
	}
	if r.list != nil {
		cols = append(cols, format.ColTime, format.ColPID, format.ColTID, format.ColComm)
	}
	return cols
}

// ColumnsA returns the columns AddA reads; ColumnsB those of AddB.
func (c *Comparison) ColumnsA() []int { return []int{c.ra.col} }

// ColumnsB: see ColumnsA.
func (c *Comparison) ColumnsB() []int { return []int{c.rb.col} }

// Empty reports whether f selects every row.
func (f *RowFilter) Empty() bool {
	return len(f.PIDs) == 0 && len(f.TIDs) == 0 && len(f.Comms) == 0 && f.From == 0 && f.To == 0
}

// columns returns the columns Match reads.
func (f *RowFilter) columns() []int {
	var cols []int
	if f == nil {
		return nil
	}
	if len(f.PIDs) > 0 {
		cols = append(cols, format.ColPID)
	}
	if len(f.TIDs) > 0 {
		cols = append(cols, format.ColTID)
	}
	if len(f.Comms) > 0 {
		cols = append(cols, format.ColComm)
	}
	if f.From != 0 || f.To != 0 {
		cols = append(cols, format.ColTime)
	}
	return cols
}

// columns returns the stack columns and, for a user stack, the pid, which
// says whose mappings its addresses are in.
func (s stackCols) columns() []int {
	var cols []int
	if s.user >= 0 {
		cols = append(cols, s.user, format.ColPID)
	}
	if s.kernel >= 0 {
		cols = append(cols, s.kernel)
	}
	return cols
}

// byFieldColumns returns the column of the key of byKey: comm, pid, tid
// or a field of probe pi.
func byFieldColumns(c *Capture, pi int, by string) []int {
	switch by {
	case "", "comm", "pid", "tid":
		return byColumns(by, nil)
	}
	p := &c.Meta().Probes[pi]
	if fi := p.Field(by); fi >= 0 {
		return []int{c.Column(p.Fields[fi].Column)}
	}
	return nil
}
