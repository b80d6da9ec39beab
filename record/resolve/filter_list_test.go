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

// runPred runs a compiled filter on an event's pid and comm as the BPF
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
		t.Fatalf("filter leaves %d values", len(stack))
	}
	return stack[0]
}

// TestProcessFilterLimit checks that --pid and --comm lists longer than a
// probe's filter can hold are refused at once, naming the limit, and that
// lists at the limit compile into a filter that keeps exactly their
// processes.
func TestProcessFilterLimit(t *testing.T) {
	if MaxProcessValues != 8 {
		t.Errorf("MaxProcessValues = %d with %d operations", MaxProcessValues, bpf.MaxPred)
	}
	many := make([]int, 100_000)
	for i := range many {
		many[i] = i + 1
	}
	start := time.Now()
	_, err := ProcessFilter(many, nil)
	if !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "--pid: 100000 values, at most 8") || len(err.Error()) > 200 {
		t.Errorf("--pid of 100000: %v", err)
	}
	t.Logf("refused in %v: %v", time.Since(start), err)
	names := make([]string, MaxProcessValues+1)
	for i := range names {
		names[i] = fmt.Sprint("c", i)
	}
	if _, err := ProcessFilter(nil, names); !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "--comm: 9 values, at most 8") {
		t.Errorf("--comm of 9: %v", err)
	}

	f, err := ProcessFilter(many[:MaxProcessValues], nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Op != probespec.FilterAny || len(f.Any) != MaxProcessValues {
		t.Fatalf("--pid of %d: %s is no flat list", MaxProcessValues, f)
	}
	want := "((((((pid == 1 || pid == 2) || pid == 3) || pid == 4) || pid == 5) || pid == 6) || pid == 7) || pid == 8"
	if got := filterText(f); got != want {
		t.Errorf("filter text %q, want %q", got, want)
	}
	var spec bpf.ProbeSpec
	if err := compileFilter(f, nil, 0, &spec); err != nil {
		t.Fatal(err)
	}
	if int(spec.Npred) != bpf.MaxPred-1 {
		t.Errorf("%d operations, want %d", spec.Npred, bpf.MaxPred-1)
	}
	if err := spec.Validate(); err != nil {
		t.Errorf("compiled filter: %v", err)
	}
	for pid := uint32(0); pid <= 20; pid++ {
		if got, want := runPred(t, &spec, pid, "x"), pid >= 1 && pid <= MaxProcessValues; got != want {
			t.Errorf("pid %d: kept %v, want %v", pid, got, want)
		}
	}

	// Both lists: what the two lists and the && between them hold.
	f, err = ProcessFilter([]int{7, 9, 11, 13}, []string{"a", "bb", "ccc", "123456789012345"})
	if err != nil {
		t.Fatal(err)
	}
	want = `(((pid == 7 || pid == 9) || pid == 11) || pid == 13) && (((comm == "a" || comm == "bb") || comm == "ccc") || comm == "123456789012345")`
	if got := filterText(f); got != want {
		t.Errorf("filter text %q, want %q", got, want)
	}
	spec = bpf.ProbeSpec{}
	if err := compileFilter(f, nil, 0, &spec); err != nil {
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
	// One more comparison overflows the program's filter.
	f, _ = ProcessFilter([]int{7, 9, 11, 13, 15}, []string{"a", "bb", "ccc", "d"})
	if err := compileFilter(f, nil, 0, &bpf.ProbeSpec{}); !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "17 operations") {
		t.Errorf("9 values: %v", err)
	}
}

// TestProcessFilterErrors checks that a --pid or --comm value the filter
// cannot hold, and a filter longer than a probe holds, are refused with
// ErrFilter.
func TestProcessFilterErrors(t *testing.T) {
	if _, err := ProcessFilter([]int{0}, nil); !errors.Is(err, ErrFilter) {
		t.Errorf("--pid 0: %v", err)
	}
	if _, err := ProcessFilter(nil, []string{"a-name-that-is-too-long"}); !errors.Is(err, ErrFilter) {
		t.Errorf("--comm too long: %v", err)
	}
	// Sixteen comparisons joined by || make 31 operations.
	var many []string
	for i := range 16 {
		many = append(many, fmt.Sprintf("arg2 == %d", i))
	}
	f, err := probespec.ParseFilter(strings.Join(many[:8], " || "))
	if err != nil {
		t.Fatal(err)
	}
	var spec bpf.ProbeSpec
	fields := []format.Field{{Name: "arg2", Type: format.Uint64}}
	if err := compileFilter(both(f, f), fields, 1, &spec); !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), "31 operations") {
		t.Errorf("too long a filter: %v", err)
	}
}
