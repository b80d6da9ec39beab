package probespec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pids returns the comparisons pid == 1 ... pid == n.
func pids(n int) []*Predicate {
	fs := make([]*Predicate, n)
	for i := range fs {
		fs[i] = &Predicate{Kind: PredCmp, Operand: "pid", Cmp: CmpEq, Int: int64(i + 1), Builtin: true}
	}
	return fs
}

// chainText is how the chain ((pid == 1 || pid == 2) || ...) of n
// comparisons writes.
func chainText(n int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("(", n-1))
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(" || ")
		}
		b.WriteString("pid == " + strconv.Itoa(i))
		if i > 1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// eval evaluates a predicate on a pid and a comm, as the recorder's
// program does (a test oracle; the predicates it sees are shallow).
func eval(f *Predicate, pid int64, comm string) bool {
	switch f.Kind {
	case PredAnd:
		return eval(f.L, pid, comm) && eval(f.R, pid, comm)
	case PredOr:
		return eval(f.L, pid, comm) || eval(f.R, pid, comm)
	case PredNot:
		return !eval(f.L, pid, comm)
	case PredAny:
		return slices.ContainsFunc(f.Any, func(a *Predicate) bool { return eval(a, pid, comm) })
	}
	eq := f.Str == comm
	if !f.IsStr {
		eq = f.Int == pid
	}
	return eq == (f.Cmp == CmpEq)
}

// TestAnyOfLimit checks that a list longer than MaxAny is refused with an
// error naming both counts, and that one of MaxAny builds a single flat
// node that writes, sizes and evaluates as the chain of || it stands for.
func TestAnyOfLimit(t *testing.T) {
	if _, err := AnyOf(pids(100_000)...); err == nil || err.Error() != "100000 values, at most 4096" {
		t.Errorf("AnyOf of 100000: %v, want the limit named", err)
	}
	if _, err := AnyOf(pids(MaxAny + 1)...); err == nil {
		t.Errorf("AnyOf of %d: no error", MaxAny+1)
	}
	f, err := AnyOf(pids(MaxAny)...)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != PredAny || len(f.Any) != MaxAny || f.L != nil || f.R != nil {
		t.Fatalf("AnyOf of %d: kind %d with %d alternatives, want one flat node", MaxAny, f.Kind, len(f.Any))
	}
	for _, a := range f.Any {
		if a.Kind != PredCmp {
			t.Fatalf("alternative %v is not a comparison", a)
		}
	}
	if got, want := f.String(), chainText(MaxAny); got != want {
		t.Errorf("String of %d pids: %d bytes %.80q..., want %d bytes %.80q...", MaxAny, len(got), got, len(want), want)
	}
	if got, want := f.Size(), 2*MaxAny-1; got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
	if got := f.Operands(); !slices.Equal(got, []string{"pid"}) {
		t.Errorf("Operands = %q", got)
	}
	for _, pid := range []int64{1, 2, 1000, MaxAny - 1, MaxAny} {
		if !eval(f, pid, "") {
			t.Errorf("pid %d is in the list, not matched", pid)
		}
	}
	for _, pid := range []int64{0, MaxAny + 1, 1 << 40} {
		if eval(f, pid, "") {
			t.Errorf("pid %d is not in the list, matched", pid)
		}
	}
}

// TestAnyOfWritesAsBefore checks that small lists write as the chain of ||
// the parser reads them back into, so that the predicates the capture names
// and messages print are those of a chain.
func TestAnyOfWritesAsBefore(t *testing.T) {
	if f, err := AnyOf(); f != nil || err != nil {
		t.Errorf("AnyOf() = %v, %v; want nil", f, err)
	}
	one := pids(1)
	if f, _ := AnyOf(one...); f != one[0] {
		t.Errorf("AnyOf of one = %v, want the comparison itself", f)
	}
	for n, want := range map[int]string{
		2: "(pid == 1 || pid == 2)",
		3: "((pid == 1 || pid == 2) || pid == 3)",
		4: "(((pid == 1 || pid == 2) || pid == 3) || pid == 4)",
	} {
		f, err := AnyOf(pids(n)...)
		if err != nil {
			t.Fatal(err)
		}
		if f.String() != want {
			t.Errorf("%d pids: %s, want %s", n, f, want)
		}
		again, err := ParsePredicate(f.String())
		if err != nil || again.String() != want || again.Size() != f.Size() {
			t.Errorf("%d pids: %s reparses as %v (size %d, want %d), %v", n, f, again, again.Size(), f.Size(), err)
		}
	}
	comms := []*Predicate{
		{Kind: PredCmp, Operand: "comm", Cmp: CmpEq, Str: "a b", IsStr: true},
		{Kind: PredCmp, Operand: "comm", Cmp: CmpEq, Str: `q"uote`, IsStr: true},
	}
	c, _ := AnyOf(comms...)
	p, _ := AnyOf(pids(3)...)
	not := &Predicate{Kind: PredNot, L: p}
	and := &Predicate{Kind: PredAnd, L: not, R: c}
	want := `(!((pid == 1 || pid == 2) || pid == 3) && (comm == "a b" || comm == "q\"uote"))`
	if and.String() != want {
		t.Errorf("mixed: %s, want %s", and, want)
	}
	if got := and.Operands(); !slices.Equal(got, []string{"pid", "comm"}) {
		t.Errorf("Operands = %q", got)
	}
	if got := and.Size(); got != 5+1+3+1 {
		t.Errorf("Size = %d, want 10", got)
	}
	// AnyOf keeps its own copy of the list.
	fs := pids(2)
	f, _ := AnyOf(fs...)
	fs[0] = fs[1]
	if f.String() != "(pid == 1 || pid == 2)" {
		t.Errorf("AnyOf shares the caller's slice: %s", f)
	}
}

// TestStringDeepChain checks that a chain of || built node by node, as
// lists were once built, writes in full however deep it is.
func TestStringDeepChain(t *testing.T) {
	const n = 50_000
	fs := pids(n)
	f := fs[0]
	for _, c := range fs[1:] {
		f = &Predicate{Kind: PredOr, L: f, R: c}
	}
	if got, want := f.String(), chainText(n); got != want {
		t.Errorf("chain of %d: %d bytes, want %d", n, len(got), len(want))
	}
	if got := f.Size(); got != 2*n-1 {
		t.Errorf("Size = %d, want %d", got, 2*n-1)
	}
	// A chain of ! as deep.
	g := fs[0]
	for range n {
		g = &Predicate{Kind: PredNot, L: g}
	}
	if got, want := g.String(), strings.Repeat("!", n)+"pid == 1"; got != want {
		t.Errorf("chain of %d !: %d bytes, want %d", n, len(got), len(want))
	}
}

// TestParsePredicateBounds checks that a long predicate is refused quickly,
// with an error that names the limit without repeating the whole text.
func TestParsePredicateBounds(t *testing.T) {
	var long []string
	for i := 1; i <= 100_000; i++ {
		long = append(long, fmt.Sprintf("pid == %d", i))
	}
	text := strings.Join(long, " || ")
	_, err := ParsePredicate(text)
	if !errors.Is(err, ErrExpr) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes, at most %d", len(text), MaxPredicateText)) {
		t.Errorf("ParsePredicate of %d bytes: %v", len(text), err)
	}
	if err != nil && len(err.Error()) > 400 {
		t.Errorf("error of %d bytes", len(err.Error()))
	}
	_, err = Parse("t:sched:sched_switch/" + text + "/")
	if !errors.Is(err, ErrExpr) || len(err.Error()) > 600 {
		t.Errorf("Parse of a %d-byte predicate: %d-byte error %.300v", len(text), len(err.Error()), err)
	}
	// Under the byte limit, the token limit stops a long predicate.
	text = strings.Join(long[:200], "||")
	if _, err := ParsePredicate(text); !errors.Is(err, ErrExpr) || !strings.Contains(err.Error(), "more than 128 tokens") {
		t.Errorf("ParsePredicate of 200 comparisons: %v", err)
	}
	// As deep as the token limit allows.
	text = strings.Repeat("(", 60) + "pid == 1" + strings.Repeat(")", 60)
	if _, err := ParsePredicate(text); !errors.Is(err, ErrExpr) || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("ParsePredicate of 60 parentheses: %v", err)
	}
	text = strings.Repeat("!", 100) + "pid == 1"
	if _, err := ParsePredicate(text); !errors.Is(err, ErrExpr) {
		t.Errorf("ParsePredicate of 100 !: %v", err)
	}
	// The most comparisons a predicate takes still parses.
	text = strings.Join(long[:8], " || ")
	if f, err := ParsePredicate(text); err != nil || f.Size() != 15 {
		t.Errorf("ParsePredicate of 8 comparisons: %v, %v", f, err)
	}
}

// TestQuoteShort checks the quoting of errors: as %q up to 200 bytes, cut at
// a rune boundary beyond.
func TestQuoteShort(t *testing.T) {
	short := strings.Repeat("é", 100)
	if got := quoteShort(short); got != strconv.Quote(short) {
		t.Errorf("quoteShort of 200 bytes = %s", got)
	}
	long := "x" + strings.Repeat("é", 1000)
	want := strconv.Quote("x"+strings.Repeat("é", 49)) + "... (2001 bytes)"
	if got := quoteShort(long); got != want {
		t.Errorf("quoteShort = %s, want %s", got, want)
	}
}

// BenchmarkAnyOfString writes a list of MaxAny pids.
func BenchmarkAnyOfString(b *testing.B) {
	f, err := AnyOf(pids(MaxAny)...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = f.String()
	}
}

// BenchmarkAnyOfRefused refuses a list of 100000 pids.
func BenchmarkAnyOfRefused(b *testing.B) {
	fs := pids(100_000)
	for b.Loop() {
		if _, err := AnyOf(fs...); err == nil {
			b.Fatal("accepted")
		}
	}
}
