package fleetsql

import (
	"errors"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
	"github.com/bpftape/bpftape/replay/hist"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// testCapture writes a capture of the probes the queries are written for
// and opens it. Its events do not matter: a query reads the schema only.
func testCapture(t *testing.T) *replay.Capture {
	t.Helper()
	m := &format.Meta{Host: "h1", Kernel: "6.1.0-test", Tool: "bpftape test", StartBoot: 7e9,
		StartWall: time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC),
		Probes: []format.Probe{
			{Name: "val", Kind: "usdt", Spec: "val=U:/bin/app:app:val", Fields: []format.Field{
				{Name: "u", Type: format.Uint64}, {Name: "s", Type: format.Int64}, {Name: "name", Type: format.String}}},
			{Name: "f", Kind: "uprobe", Spec: "f=u:/bin/app:f", Fields: []format.Field{{Name: "id", Type: format.Uint64}}},
			{Name: "f_ret", Kind: "uretprobe", Spec: "f_ret=ur:/bin/app:f", Fields: []format.Field{{Name: "id", Type: format.Uint64}, {Name: "name", Type: format.String}}},
			{Name: "it's", Kind: "usdt", Spec: "u:/bin/app:x", Fields: []format.Field{{Name: "v", Type: format.Int32}}},
		}}
	path := replaytest.Write(t, m, nil, 0,
		replaytest.Row{Event: format.Event{Time: 8e9, TID: 1, Probe: 0, Ints: []uint64{1, 2, 0}, Strs: [][]byte{nil, nil, []byte("x")}}})
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var ladderLine = regexp.MustCompile(`^\s*WHEN (\w+) < (\d+|CAST\('(\d+)' AS DECIMAL\(20,0\)\)) THEN (\d+)$|^\s*ELSE (\d+)$`)

// evalLadder evaluates a slot ladder (slotExpr, unitSlotExpr) for value v,
// as an engine would: the first WHEN whose comparison holds, else ELSE.
func evalLadder(t *testing.T, expr string, v *big.Int) int {
	t.Helper()
	for _, line := range strings.Split(expr, "\n")[1:] {
		m := ladderLine.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) == "END" {
				break
			}
			t.Fatalf("ladder line %q", line)
		}
		if m[5] != "" {
			n, _ := strconv.Atoi(m[5])
			return n
		}
		lit := m[2]
		if m[3] != "" {
			lit = m[3]
		}
		bound, _ := new(big.Int).SetString(lit, 10)
		if v.Cmp(bound) < 0 {
			n, _ := strconv.Atoi(m[4])
			return n
		}
	}
	t.Fatalf("ladder without ELSE:\n%s", expr)
	return 0
}

// TestSlotLadder checks the ladder against hist.Log2Slot, bpftape's own
// bucketing (a value taken as u64), at every edge: 0, 1, 2^k-1, 2^k, 2^63,
// 2^64-1 of unsigned types as DuckDB reads them (UBIGINT) and as an engine
// reading them as BIGINT does, and the negative values of signed types.
func TestSlotLadder(t *testing.T) {
	for _, ty := range []format.Type{format.Int8, format.Int16, format.Int32, format.Int64,
		format.Uint8, format.Uint16, format.Uint32, format.Uint64} {
		vt := typeOf(ty)
		expr := slotExpr("v", vt, "")
		var edges []uint64 // the value's bits, as a capture holds them
		for k := 0; k < vt.bits; k++ {
			edges = append(edges, 1<<k, 1<<k-1, 1<<k+1)
		}
		edges = append(edges, 0, math.MaxUint64>>(64-vt.bits))
		for _, bits := range edges {
			bits &= math.MaxUint64 >> (64 - vt.bits)
			// What bpftape holds: the value sign- or zero-extended to 64 bits.
			var v int64
			if vt.signed {
				v = int64(bits<<(64-vt.bits)) >> (64 - vt.bits)
			} else {
				v = int64(bits)
			}
			want := hist.Log2Slot(uint64(v))
			seen := []*big.Int{new(big.Int).SetInt64(v)} // signed as it is
			if !vt.signed {
				seen = []*big.Int{new(big.Int).SetUint64(uint64(v)), new(big.Int).SetInt64(v)} // UBIGINT and BIGINT
			}
			for _, s := range seen {
				if got := evalLadder(t, expr, s); got != want {
					t.Errorf("%s value %s: slot %d, bpftape %d", ty, s, got, want)
				}
			}
		}
	}
}

// TestUnitLadder checks latency's ladder in each unit: floor(ns/unit)'s
// slot, as bpftape latency buckets a duration, for durations up to the
// largest an int64 holds.
func TestUnitLadder(t *testing.T) {
	for _, unit := range []int64{1, 1000, 1000000} {
		expr := unitSlotExpr("ns", unit, "")
		var ns []int64
		add := func(vs ...int64) {
			for _, v := range vs {
				if v >= 0 {
					ns = append(ns, v)
				}
			}
		}
		for k := 0; k < 63; k++ {
			p := int64(1) << k
			add(p-1, p, p+1)
			if p <= math.MaxInt64/unit { // unit*2^k, where the slots change
				add(p*unit-1, p*unit)
				if p*unit < math.MaxInt64 {
					add(p*unit + 1)
				}
			}
		}
		add(math.MaxInt64)
		for _, v := range ns {
			want := hist.Log2Slot(uint64(v / unit))
			if got := evalLadder(t, expr, big.NewInt(v)); got != want {
				t.Errorf("unit %d, %d ns: slot %d, bpftape %d", unit, v, got, want)
			}
		}
	}
}

// TestQueries checks what each verb's query reads and keeps.
func TestQueries(t *testing.T) {
	c := testCapture(t)
	q, err := Hist(c, Options{}, HistOptions{Probe: "val", Field: "u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FROM read_parquet('fleet/*/*/*.parquet', hive_partitioning=true, union_by_name=true)",
		`SELECT "val.u" AS v`, "WHERE lost IS NULL", "AND probe = 'val'", `CAST('9223372036854775808' AS DECIMAL(20,0)) THEN 63`,
		"(64, '9223372036854775808', '18446744073709551615')",
	} {
		if !strings.Contains(q, want) {
			t.Errorf("hist query lacks %q:\n%s", want, q)
		}
	}
	if strings.HasSuffix(strings.TrimSpace(q), ";") {
		t.Error("the query ends with a semicolon, which Trino's client API refuses")
	}
	o := Options{Table: "hive.bpf.fleet", Rows: replay.RowFilter{PIDs: []uint32{4, 5}, TIDs: []uint32{6}, Comms: []string{"app"}, From: 2 * time.Second, To: 3 * time.Second}}
	q, err = Count(c, o, CountOptions{Probes: []string{"f*"}, By: "comm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FROM hive.bpf.fleet", "probe IN ('f', 'f_ret')", "pid IN (4, 5)", "tid = 6", "comm = 'app'",
		"time >= 9000000000", "time < 10000000000", "GROUP BY probe, comm", "-- --from and --to count from the capture's start, 7000000000 ns"} {
		if !strings.Contains(q, want) {
			t.Errorf("count query lacks %q:\n%s", want, q)
		}
	}
	q, err = Latency(c, Options{Path: "s3://b/fleet/"}, LatencyOptions{Entry: "f", Return: "f_ret", Key: []string{"id"}, Unit: "ms"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read_parquet('s3://b/fleet/*/*/*.parquet'", `CASE WHEN probe = 'f' THEN "f.id" ELSE "f_ret.id" END AS k1`,
		"PARTITION BY host, k1 ORDER BY time, step", "WHEN ns < 2000000 THEN 1", "ELSE 44"} {
		if !strings.Contains(q, want) {
			t.Errorf("latency query lacks %q:\n%s", want, q)
		}
	}
	q, err = Requests(c, Options{}, RequestsOptions{ItemProbe: "val", ItemField: "s", EndProbe: "f_ret", EndField: "id", EndCast: "s32"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PARTITION BY host, tid", `CAST("val.s" AS DECIMAL(38,0))`, "% 4294967296", "% CAST('18446744073709551616' AS DECIMAL(38,0))"} {
		if !strings.Contains(q, want) {
			t.Errorf("requests query lacks %q:\n%s", want, q)
		}
	}
}

// TestBadInput: every refusal is a one-line usage error that says what
// is wrong, with the sentinel where there is one.
func TestBadInput(t *testing.T) {
	c := testCapture(t)
	for _, tc := range []struct {
		name string
		run  func() (string, error)
		want string
		is   error
	}{
		{"unknown probe", func() (string, error) { return Hist(c, Options{}, HistOptions{Probe: "nope", Field: "u"}) }, `no probe "nope"`, nil},
		{"unknown field", func() (string, error) { return Hist(c, Options{}, HistOptions{Probe: "val", Field: "zz"}) }, `no field "zz"`, nil},
		{"string field", func() (string, error) { return Hist(c, Options{}, HistOptions{Probe: "val", Field: "name"}) }, "val.name is a string", ErrNotInteger},
		{"bad cast", func() (string, error) { return Hist(c, Options{}, HistOptions{Probe: "val", Field: "u", Cast: "s7"}) }, `cast "s7"`, nil},
		{"quote in comm", func() (string, error) {
			return Count(c, Options{Rows: replay.RowFilter{Comms: []string{`a'b`}}}, CountOptions{})
		}, "--comm", ErrUnportable},
		{"backslash in path", func() (string, error) { return Count(c, Options{Path: `C:\fleet`}, CountOptions{}) }, "--path", ErrUnportable},
		{"quote in probe", func() (string, error) { return Hist(c, Options{}, HistOptions{Probe: "it's", Field: "v"}) }, "probe", ErrUnportable},
		{"bad table", func() (string, error) { return Count(c, Options{Table: "t; DROP TABLE x"}, CountOptions{}) }, "--table", ErrTable},
		{"bad by", func() (string, error) { return Count(c, Options{}, CountOptions{By: "cpu"}) }, `--by "cpu"`, nil},
		{"no probe matches", func() (string, error) { return Count(c, Options{}, CountOptions{Probes: []string{"x*"}}) }, "no probe", nil},
		{"same probe", func() (string, error) { return Latency(c, Options{}, LatencyOptions{Entry: "f", Return: "f"}) }, "same probe", nil},
		{"bad unit", func() (string, error) {
			return Latency(c, Options{}, LatencyOptions{Entry: "f", Return: "f_ret", Unit: "s"})
		}, `unit "s"`, nil},
		{"key kinds differ", func() (string, error) {
			return Latency(c, Options{}, LatencyOptions{Entry: "val", Return: "f_ret", Key: []string{"name", "u"}})
		}, "--key", nil},
		{"key missing", func() (string, error) {
			return Latency(c, Options{}, LatencyOptions{Entry: "val", Return: "f", Key: []string{"name"}})
		}, `no field "name"`, nil},
		{"global and key", func() (string, error) {
			return Requests(c, Options{}, RequestsOptions{ItemProbe: "f", ItemField: "id", EndProbe: "f_ret", EndField: "id", Global: true, Key: []string{"id"}})
		}, "exclude each other", nil},
	} {
		q, err := tc.run()
		switch {
		case err == nil:
			t.Errorf("%s: no error; query:\n%s", tc.name, q)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: a multi-line error %q", tc.name, err)
		case !strings.Contains(err.Error(), tc.want) || !usage.Is(err):
			t.Errorf("%s: %q (usage error %v), want it to say %q", tc.name, err, usage.Is(err), tc.want)
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%s: %q is not %v", tc.name, err, tc.is)
		}
	}
	// The key fields must have one kind in both probes: name is a string
	// in val and f_ret, u an integer in val only, so it fails on f_ret.
	if _, err := Latency(c, Options{}, LatencyOptions{Entry: "val", Return: "f_ret", Key: []string{"name"}}); err != nil {
		t.Errorf("a string key both probes have: %v", err)
	}
}
