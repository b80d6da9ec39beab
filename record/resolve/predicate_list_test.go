package resolve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/probespec"
)

// runPred runs a compiled predicate on an event's pid and comm as the BPF
// program does: postfix, on a stack of truth values.
func runPred(t *testing.T, spec *bpf.ProbeSpec, pid uint32, comm string) bool {
	t.Helper()
	var c [bpf.CommLen]byte
	copy(c[:], comm)
	var stack []bool
	for _, p := range spec.Pred[:spec.Npred] {
		switch p.Op {
		case bpf.PredAnd, bpf.PredOr:
			a, b := stack[len(stack)-2], stack[len(stack)-1]
			stack = stack[:len(stack)-2]
			if p.Op == bpf.PredAnd {
				stack = append(stack, a && b)
			} else {
				stack = append(stack, a || b)
			}
			continue
		case bpf.PredNot:
			stack[len(stack)-1] = !stack[len(stack)-1]
			continue
		}
		var eq bool
		switch p.Operand {
		case bpf.OperandPID:
			eq = uint64(pid) == p.Val
		case bpf.OperandComm:
			// The first Len bytes, the constant's NUL included.
			var k [bpf.CommLen]byte
			binary.LittleEndian.PutUint64(k[:8], p.Val)
			binary.LittleEndian.PutUint64(k[8:], p.Val2)
			eq = string(c[:p.Len]) == string(k[:p.Len])
		default:
			t.Fatalf("operand %d", p.Operand)
		}
		if p.Op == bpf.PredNe {
			eq = !eq
		}
		stack = append(stack, eq)
	}
	if len(stack) != 1 {
		t.Fatalf("predicate leaves %d values", len(stack))
	}
	return stack[0]
}

// TestProcessPredicateLimit checks that --pid and --comm lists longer than a
// probe's predicate can hold are refused at once, naming the limit, and
// that lists at the limit compile into a predicate that keeps exactly their
// processes.
func TestProcessPredicateLimit(t *testing.T) {
	if MaxProcessValues != 8 {
		t.Errorf("MaxProcessValues = %d with %d operations", MaxProcessValues, bpf.MaxPred)
	}
	many := make([]int, 100_000)
	for i := range many {
		many[i] = i + 1
	}
	start := time.Now()
	_, err := ProcessPredicate(many, nil)
	if !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "--pid: 100000 values, at most 8") || len(err.Error()) > 200 {
		t.Errorf("--pid of 100000: %v", err)
	}
	t.Logf("refused in %v: %v", time.Since(start), err)
	names := make([]string, MaxProcessValues+1)
	for i := range names {
		names[i] = fmt.Sprint("c", i)
	}
	if _, err := ProcessPredicate(nil, names); !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "--comm: 9 values, at most 8") {
		t.Errorf("--comm of 9: %v", err)
	}

	f, err := ProcessPredicate(many[:MaxProcessValues], nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != probespec.PredAny || len(f.Any) != MaxProcessValues {
		t.Fatalf("--pid of %d: %s is no flat list", MaxProcessValues, f)
	}
	want := "((((((pid == 1 || pid == 2) || pid == 3) || pid == 4) || pid == 5) || pid == 6) || pid == 7) || pid == 8"
	if got := predicateText(f); got != want {
		t.Errorf("predicate text %q, want %q", got, want)
	}
	var spec bpf.ProbeSpec
	if err := compilePredicate(f, nil, 0, nil, &spec); err != nil {
		t.Fatal(err)
	}
	if int(spec.Npred) != bpf.MaxPred-1 {
		t.Errorf("%d operations, want %d", spec.Npred, bpf.MaxPred-1)
	}
	if err := spec.Validate(); err != nil {
		t.Errorf("compiled predicate: %v", err)
	}
	for pid := uint32(0); pid <= 20; pid++ {
		if got, want := runPred(t, &spec, pid, "x"), pid >= 1 && pid <= MaxProcessValues; got != want {
			t.Errorf("pid %d: kept %v, want %v", pid, got, want)
		}
	}

	// Both lists: what the two lists and the && between them hold.
	f, err = ProcessPredicate([]int{7, 9, 11, 13}, []string{"a", "bb", "ccc", "123456789012345"})
	if err != nil {
		t.Fatal(err)
	}
	want = `(((pid == 7 || pid == 9) || pid == 11) || pid == 13) && (((comm == "a" || comm == "bb") || comm == "ccc") || comm == "123456789012345")`
	if got := predicateText(f); got != want {
		t.Errorf("predicate text %q, want %q", got, want)
	}
	spec = bpf.ProbeSpec{}
	if err := compilePredicate(f, nil, 0, nil, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Npred != 15 || spec.Flags&bpf.SpecFilterComm == 0 {
		t.Errorf("%d operations, flags %#x", spec.Npred, spec.Flags)
	}
	for _, tc := range []struct {
		pid  uint32
		comm string
		want bool
	}{
		{7, "a", true}, {13, "123456789012345", true}, {9, "ccc", true},
		{8, "a", false}, {7, "ab", false}, {7, "", false}, {11, "12345678901234", false},
	} {
		if got := runPred(t, &spec, tc.pid, tc.comm); got != tc.want {
			t.Errorf("pid %d comm %q: kept %v, want %v", tc.pid, tc.comm, got, tc.want)
		}
	}
	// One more comparison overflows the program's predicate.
	f, _ = ProcessPredicate([]int{7, 9, 11, 13, 15}, []string{"a", "bb", "ccc", "d"})
	if err := compilePredicate(f, nil, 0, nil, &bpf.ProbeSpec{}); !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "17 operations") {
		t.Errorf("9 values: %v", err)
	}
}

// TestProcessPredicateErrors checks that a --pid or --comm value the
// predicate cannot hold, and a predicate longer than a probe holds, are
// refused with
// ErrFilter.
func TestProcessPredicateErrors(t *testing.T) {
	if _, err := ProcessPredicate([]int{0}, nil); !errors.Is(err, ErrFilter) {
		t.Errorf("--pid 0: %v", err)
	}
	if _, err := ProcessPredicate(nil, []string{"a-name-that-is-too-long"}); !errors.Is(err, ErrFilter) {
		t.Errorf("--comm too long: %v", err)
	}
	// Sixteen comparisons joined by || make 31 operations.
	var many []string
	for i := range 16 {
		many = append(many, fmt.Sprintf("arg2 == %d", i))
	}
	f, err := probespec.ParsePredicate(strings.Join(many[:8], " || "))
	if err != nil {
		t.Fatal(err)
	}
	var spec bpf.ProbeSpec
	fields := []format.Field{{Name: "arg2", Type: format.Uint64}}
	if err := compilePredicate(both(f, f), fields, 1, nil, &spec); !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "31 operations") {
		t.Errorf("too long a predicate: %v", err)
	}
}

// TestCompileCmpOps checks that each comparison operator compiles into its
// BPF operation, written either way round, and that no operator is refused.
func TestCompileCmpOps(t *testing.T) {
	fields := []format.Field{{Name: "arg2", Type: format.Uint64}}
	for _, tc := range []struct {
		op            string
		want, flipped uint8
	}{
		{"==", bpf.PredEq, bpf.PredEq},
		{"!=", bpf.PredNe, bpf.PredNe},
		{"<", bpf.PredLt, bpf.PredGt},
		{"<=", bpf.PredLe, bpf.PredGe},
		{">", bpf.PredGt, bpf.PredLt},
		{">=", bpf.PredGe, bpf.PredLe},
	} {
		for text, want := range map[string]uint8{"arg2 " + tc.op + " 5": tc.want, "5 " + tc.op + " arg2": tc.flipped} {
			f, err := probespec.ParsePredicate(text)
			if err != nil {
				t.Fatal(err)
			}
			var spec bpf.ProbeSpec
			if err := compilePredicate(f, fields, 1, nil, &spec); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			if p := spec.Pred[0]; spec.Npred != 1 || p.Op != want || p.Operand != bpf.OperandField || p.Val != 5 {
				t.Errorf("%s: %d operations, the first %+v; want op %d on field 0 with 5", text, spec.Npred, p, want)
			}
		}
	}
	for _, op := range []probespec.CmpOp{0, probespec.CmpGe + 1} {
		f := &probespec.Predicate{Kind: probespec.PredCmp, Operand: "arg2", Cmp: op, Int: 5}
		if err := compilePredicate(f, fields, 1, nil, &bpf.ProbeSpec{}); !errors.Is(err, ErrFilter) {
			t.Errorf("operator %d: %v, want ErrFilter", op, err)
		}
	}
}
