package fleetsql

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
)

// pow2 is 2^k, k at most 63, as a literal every engine reads exactly: an
// integer up to 2^62, 2^63 (past BIGINT) as a DECIMAL(20,0) cast from a
// string.
func pow2(k int) string {
	if k <= 62 {
		return strconv.FormatUint(1<<k, 10)
	}
	return decimal(strconv.FormatUint(1<<63, 10), 20)
}

// two64 is 2^64, by which a sum wraps as bpftape's int64 sum does.
var two64 = decimal("18446744073709551616", 38)

// decimal is the literal CAST('digits' AS DECIMAL(p,0)).
func decimal(digits string, p int) string {
	return fmt.Sprintf("CAST('%s' AS DECIMAL(%d,0))", digits, p)
}

// valueType is how a value is bucketed: its width and sign.
type valueType struct {
	bits   int
	signed bool
}

func typeOf(t format.Type) valueType {
	return valueType{bits: 8 * t.Size(), signed: t.Signed()}
}

// castTo parses a --cast (s8, u8, ... u64); "" keeps t.
func castTo(name string, t valueType) (valueType, bool, error) {
	if name == "" {
		return t, false, nil
	}
	ct, err := probespec.ParseType(name)
	if err != nil || !ct.IsInt() {
		return t, false, usage.Errorf("cast %q: want %s", name, probespec.FieldTypeNames)
	}
	return typeOf(ct), true, nil
}

// castExpr is v reinterpreted as t, as a C cast (and bpftape's --cast)
// does: the low t.bits bits of its two's complement, sign-extended for a
// signed t. A cast to 64 bits changes no log2 slot (a uint64 of 2^63 or
// more and a negative int64 are both in slot 64), so it is v itself.
func castExpr(v string, t valueType) string {
	if t.bits >= 64 {
		return v
	}
	// In DECIMAL(20,0), which holds every int64 and uint64: DuckDB's
	// UBIGINT arithmetic refuses to go below 0.
	m := strconv.FormatUint(1<<t.bits, 10)
	low := fmt.Sprintf("((CAST(%s AS DECIMAL(20,0)) %% %s) + %s) %% %s", v, m, m, m)
	if !t.signed {
		return low
	}
	half := strconv.FormatUint(1<<(t.bits-1), 10)
	return fmt.Sprintf("CASE WHEN %s >= %s THEN %s - %s ELSE %s END", low, half, low, m, low)
}

// slotExpr is the log2 slot of v, of type t, as bpftape's hist (BCC's
// bpf_log2l of v taken as u64) finds it: a ladder of comparisons with
// powers of two, indented by indent.
func slotExpr(v string, t valueType, indent string) string {
	var b strings.Builder
	b.WriteString("CASE")
	// A negative signed value, taken as u64, is 2^63 or more: slot 64. So
	// is a uint64 of 2^63 or more that an engine reads as a negative BIGINT.
	if t.signed || t.bits == 64 {
		fmt.Fprintf(&b, "\n%s  WHEN %s < 0 THEN 64", indent, v)
	}
	top := t.bits // the highest slot a value of t reaches
	if t.signed {
		top = t.bits - 1
	}
	for k := 1; k < top; k++ {
		fmt.Fprintf(&b, "\n%s  WHEN %s < %s THEN %d", indent, v, pow2(k), k)
	}
	fmt.Fprintf(&b, "\n%s  ELSE %d\n%sEND", indent, top, indent)
	return b.String()
}

// unitSlotExpr is the log2 slot of floor(ns/unit), ns a non-negative
// duration in nanoseconds: ns < unit*2^k for as long as unit*2^k is a
// BIGINT; the largest duration's slot past that.
func unitSlotExpr(ns string, unit int64, indent string) string {
	var b strings.Builder
	b.WriteString("CASE")
	k := 1
	for ; uint64(unit) <= math.MaxInt64>>k; k++ {
		fmt.Fprintf(&b, "\n%s  WHEN %s < %d THEN %d", indent, ns, unit<<k, k)
	}
	fmt.Fprintf(&b, "\n%s  ELSE %d\n%sEND", indent, k, indent)
	return b.String()
}

// bucketsCTE is the CTE "buckets" of the 64 slots and the ranges BCC
// prints for them (slot 1: 0 to 1, slot k: 2^(k-1) to 2^k-1), as
// DECIMAL(20,0), which holds 2^64-1 in every engine.
func bucketsCTE() string {
	var b strings.Builder
	b.WriteString("  buckets AS (\n    SELECT slot, CAST(low AS DECIMAL(20,0)) AS low, CAST(high AS DECIMAL(20,0)) AS high\n    FROM (VALUES")
	for k := 1; k <= 64; k++ {
		low := uint64(1) << (k - 1)
		if k == 1 {
			low = 0
		}
		high := uint64(math.MaxUint64) >> (64 - k)
		if (k-1)%4 == 0 {
			b.WriteString("\n      ")
		} else {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(%d, '%d', '%d')", k, low, high)
		if k < 64 {
			b.WriteString(",")
		}
	}
	b.WriteString("\n    ) AS b(slot, low, high)\n  )")
	return b.String()
}
