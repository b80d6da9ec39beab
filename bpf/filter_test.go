package bpf

import "testing"

// TestQuickFields checks which filters the program runs first, on at most
// two fields read from its context (SpecQuickFilter), and that PutSpec's
// flag and fields pass Validate.
func TestQuickFields(t *testing.T) {
	di, si := reg(RegDI, 8, true), reg(RegSI, 8, false)
	tp := ArgSpec{Kind: KindTPField, Off: 16, Size: 8}
	for _, tc := range []struct {
		name  string
		spec  ProbeSpec
		quick bool
		q     [2]uint8
	}{
		{"no filter", spec(1, ClassArgs2, di, si), false, [2]uint8{}},
		{"one register", withFilter(spec(1, ClassArgs2, di, si), cmp(PredEq, OperandField, 1, false, 5)), true, [2]uint8{1, 1}},
		{"two registers and the comm", withFilter(spec(1, ClassArgs2, di, si),
			cmp(PredEq, OperandField, 1, false, 5), cmp(PredLt, OperandField, 0, true, 0), PredOp{Op: PredAnd},
			commOp(PredEq, "x"), PredOp{Op: PredOr}), true, [2]uint8{1, 0}},
		{"pid only", withFilter(spec(1, ClassArgs2, di, si), cmp(PredEq, OperandPID, 0, false, 5)), true, [2]uint8{}},
		{"a field twice", withFilter(spec(1, ClassArgs2, di, si),
			cmp(PredGt, OperandField, 0, true, 1), cmp(PredLt, OperandField, 0, true, 9), PredOp{Op: PredAnd}), true, [2]uint8{0, 0}},
		{"tracepoint field", withFilter(spec(1, ClassArgs1, tp), cmp(PredNe, OperandField, 0, false, 0)), true, [2]uint8{}},
		{"three fields", withFilter(spec(1, ClassArgs6, di, si, tp),
			cmp(PredEq, OperandField, 0, false, 1), cmp(PredEq, OperandField, 1, false, 1), PredOp{Op: PredAnd},
			cmp(PredEq, OperandField, 2, false, 1), PredOp{Op: PredAnd}), false, [2]uint8{}},
		{"user memory", withFilter(spec(1, ClassArgs1, deref(RegDI, 8, 4, false)), cmp(PredEq, OperandField, 0, false, 1)), false, [2]uint8{}},
		{"an expression", withFilter(spec(1, ClassArgs1, expression(RegDI, LeafRead, 4, 0, 8)), cmp(PredEq, OperandField, 0, false, 1)), false, [2]uint8{}},
	} {
		q := tc.spec.withQuickFilter()
		if got := q.Flags&SpecQuickFilter != 0; got != tc.quick || q.Qfield != tc.q {
			t.Errorf("%s: quick %v, fields %v; want %v, %v", tc.name, got, q.Qfield, tc.quick, tc.q)
		}
		if err := q.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		// A caller's flag without the fields it implies is refused.
		if !tc.quick && tc.spec.Npred > 0 {
			bad := tc.spec
			bad.Flags |= SpecQuickFilter
			if bad.Validate() == nil {
				t.Errorf("%s: a quick-filter flag on a filter that is not quick passed Validate", tc.name)
			}
		}
	}
}
