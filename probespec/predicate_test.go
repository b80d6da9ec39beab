package probespec

import (
	"strconv"
	"testing"
)

// TestCmpOp checks each comparison operator: its C spelling, its flip, and
// that the parser reads it, with the operand on either side.
func TestCmpOp(t *testing.T) {
	for _, tc := range []struct {
		op   CmpOp
		text string
		flip CmpOp
	}{
		{CmpEq, "==", CmpEq},
		{CmpNe, "!=", CmpNe},
		{CmpLt, "<", CmpGt},
		{CmpLe, "<=", CmpGe},
		{CmpGt, ">", CmpLt},
		{CmpGe, ">=", CmpLe},
	} {
		if got := tc.op.String(); got != tc.text {
			t.Errorf("CmpOp(%d).String() = %q, want %q", tc.op, got, tc.text)
		}
		if got := tc.op.Flip(); got != tc.flip {
			t.Errorf("%s.Flip() = %s, want %s", tc.op, got, tc.flip)
		}
		if got := tc.op.Flip().Flip(); got != tc.op {
			t.Errorf("%s flipped twice = %s", tc.op, got)
		}
		if got, ok := parseCmpOp(tc.text); !ok || got != tc.op {
			t.Errorf("parseCmpOp(%q) = %s, %v; want %s", tc.text, got, ok, tc.op)
		}
		// x OP 5 as written; 5 OP x read as x FLIP 5.
		for _, side := range []struct {
			text string
			want CmpOp
		}{{"x " + tc.text + " 5", tc.op}, {"5 " + tc.text + " x", tc.flip}} {
			f, err := ParsePredicate(side.text)
			if err != nil {
				t.Errorf("ParsePredicate(%q): %v", side.text, err)
				continue
			}
			if f.Kind != PredCmp || f.Operand != "x" || f.Cmp != side.want || f.Int != 5 {
				t.Errorf("ParsePredicate(%q) = %+v, want x %s 5", side.text, f, side.want)
			}
			if want := "x " + side.want.String() + " 5"; f.String() != want {
				t.Errorf("ParsePredicate(%q) writes %q, want %q", side.text, f, want)
			}
		}
	}
	for _, bad := range []string{"", "=", "<>", "=<", "&&", "!"} {
		if op, ok := parseCmpOp(bad); ok {
			t.Errorf("parseCmpOp(%q) = %s, want none", bad, op)
		}
	}
	for _, o := range []CmpOp{0, CmpGe + 1, 255} {
		if got, want := o.String(), "CmpOp("+strconv.Itoa(int(o))+")"; got != want {
			t.Errorf("String of operator %d = %q, want %q", o, got, want)
		}
		if o.Flip() != o {
			t.Errorf("operator %d flips into %d", o, o.Flip())
		}
	}
}
