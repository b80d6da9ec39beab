package hist

import (
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestStatsBuckets(t *testing.T) {
	for _, tc := range []struct {
		m          uint64
		chunk, sub int
	}{
		{0, 0, 0}, {127, 0, 127}, {128, 1, 0}, {255, 1, 127}, {256, 2, 0},
		{257, 2, 0}, {258, 2, 1}, {1 << 63, 57, 0}, {math.MaxUint64, 57, 127},
	} {
		c, s := statsBucket(tc.m)
		if c != tc.chunk || s != tc.sub {
			t.Errorf("statsBucket(%d) = %d, %d, want %d, %d", tc.m, c, s, tc.chunk, tc.sub)
		}
		// Every magnitude is within half a bucket of its bucket's middle.
		mid := statsMid(c, s)
		d := max(mid, tc.m) - min(mid, tc.m)
		if hi, lo := mulSmall(d, 256); tc.m >= 128 && (hi != 0 || lo > tc.m) || tc.m < 128 && d != 0 {
			t.Errorf("statsMid(%d, %d) = %d is too far from %d", c, s, mid, tc.m)
		}
	}
}

func mulSmall(a, b uint64) (hi, lo uint64) {
	x := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	lo = new(big.Int).And(x, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi = new(big.Int).Rsh(x, 64).Uint64()
	return hi, lo
}

// exactPercentile is the nearest-rank percentile of sorted values.
func exactPercentile(sorted []int64, p float64) int64 {
	r := rank(p, uint64(len(sorted)))
	return sorted[max(r, 1)-1]
}

func magnitude(v int64) uint64 {
	if v < 0 {
		return -uint64(v)
	}
	return uint64(v)
}

func absDiff(a, b int64) uint64 {
	if a > b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}

func TestStatsPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := []struct {
		name string
		gen  func() int64
	}{
		{"small", func() int64 { return rng.Int64N(300) - 150 }},
		{"uniform", func() int64 { return int64(rng.Uint64()) }},
		{"lognorm", func() int64 { return int64(math.Exp(rng.NormFloat64()*3 + 10)) }},
		{"latency", func() int64 { return 1000 + rng.Int64N(50)*rng.Int64N(1_000_000) }},
		{"negative", func() int64 { return -int64(math.Exp(rng.NormFloat64()*4 + 8)) }},
		{"mixed", func() int64 {
			v := int64(math.Exp(rng.NormFloat64()*5 + 5))
			if rng.IntN(3) == 0 {
				return -v
			}
			return v
		}},
		{"extremes", func() int64 {
			return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1, math.MinInt64 + 1}[rng.IntN(6)]
		}},
	}
	ps := []float64{0, 0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100}
	approximated := 0
	for _, g := range gens {
		name, gen := g.name, g.gen
		for _, n := range []int{1, 2, 3, 10, 101, 1000, 100_000} {
			var s Stats
			vals := make([]int64, n)
			sum := new(big.Int)
			for i := range vals {
				vals[i] = gen()
				s.Add(vals[i])
				sum.Add(sum, big.NewInt(vals[i]))
			}
			slices.Sort(vals)
			if s.Count() != uint64(n) || s.Min() != vals[0] || s.Max() != vals[n-1] || s.Sum().Cmp(sum) != 0 {
				t.Fatalf("%s/%d: count/min/max/sum = %d/%d/%d/%v", name, n, s.Count(), s.Min(), s.Max(), s.Sum())
			}
			mean, _ := new(big.Float).Quo(new(big.Float).SetInt(sum), big.NewFloat(float64(n))).Float64()
			if got := s.Mean(); got != mean {
				t.Errorf("%s/%d: Mean = %v, want %v", name, n, got, mean)
			}
			for _, p := range append(ps, rng.Float64()*100, rng.Float64()*100, rng.Float64()*10) {
				got, want := s.Percentile(p), exactPercentile(vals, p)
				if got == want {
					continue
				}
				approximated++
				m, d := magnitude(want), absDiff(got, want)
				if m < 128 {
					t.Errorf("%s/%d: p%v = %d, want %d", name, n, p, got, want)
					continue
				}
				if hi, lo := mulSmall(d, 256); hi != 0 || lo > m {
					t.Errorf("%s/%d: p%v = %d, want %d: error %d over 1/256", name, n, p, got, want, d)
				}
			}
		}
	}
	if approximated < 100 {
		t.Errorf("only %d percentiles were not exact: the test is too easy", approximated)
	}
	t.Logf("%d percentiles approximated within the bound", approximated)
}

func TestStatsEmpty(t *testing.T) {
	var s Stats
	if s.Count() != 0 || s.Min() != 0 || s.Max() != 0 || s.Mean() != 0 || s.Sum().Sign() != 0 || s.Percentile(50) != 0 {
		t.Fatal("zero Stats is not empty")
	}
}

func TestStatsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, all Stats
	for range 10000 {
		v := int64(rng.NormFloat64() * 1e6)
		all.Add(v)
		if rng.IntN(2) == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	var m Stats
	m.Merge(&Stats{})
	m.Merge(&a)
	m.Merge(&b)
	if m.Count() != all.Count() || m.Min() != all.Min() || m.Max() != all.Max() || m.Sum().Cmp(all.Sum()) != 0 {
		t.Fatal("merged summary differs")
	}
	for p := 0.0; p <= 100; p += 0.5 {
		if m.Percentile(p) != all.Percentile(p) {
			t.Errorf("merged p%v = %d, want %d", p, m.Percentile(p), all.Percentile(p))
		}
	}
}

// TestStatsReset: a Stats reset and filled again summarizes and merges as
// a new one, without allocating for the buckets it had.
func TestStatsReset(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var used Stats
	for range 1000 {
		used.Add(int64(rng.NormFloat64() * 1e9))
	}
	used.Reset()
	if used.Count() != 0 || used.Min() != 0 || used.Max() != 0 || used.Sum().Sign() != 0 {
		t.Fatalf("reset: count %d, min %d, max %d, sum %v", used.Count(), used.Min(), used.Max(), used.Sum())
	}
	var fresh, mu, mf Stats
	vs := make([]int64, 500)
	for i := range vs {
		vs[i] = int64(rng.NormFloat64() * 1e6)
	}
	// Reset and filled again, the same values: no allocation after the
	// first fill.
	if n := testing.AllocsPerRun(3, func() { used.Reset(); used.AddAll(vs) }); n != 0 {
		t.Errorf("%v allocations filling the buckets made before the reset", n)
	}
	fresh.AddAll(vs)
	mu.Merge(&used)
	mf.Merge(&fresh)
	for _, pair := range [][2]*Stats{{&used, &fresh}, {&mu, &mf}} {
		a, b := pair[0], pair[1]
		if a.Count() != b.Count() || a.Min() != b.Min() || a.Max() != b.Max() || a.Sum().Cmp(b.Sum()) != 0 {
			t.Fatalf("after reset: count %d min %d max %d sum %v, want %d %d %d %v", a.Count(), a.Min(), a.Max(), a.Sum(), b.Count(), b.Min(), b.Max(), b.Sum())
		}
		for p := 0.0; p <= 100; p += 0.5 {
			if a.Percentile(p) != b.Percentile(p) {
				t.Errorf("after reset: p%v = %d, want %d", p, a.Percentile(p), b.Percentile(p))
			}
		}
	}
}

func TestStatsAddAllocs(t *testing.T) {
	var s Stats
	vals := []int64{-5, 0, 3, 1000, 123456789, -987654321}
	for _, v := range vals {
		s.Add(v)
	}
	if n := testing.AllocsPerRun(1000, func() {
		for _, v := range vals {
			s.Add(v)
		}
	}); n != 0 {
		t.Fatalf("Add allocates %v times once warm", n)
	}
}

// TestStatsAddN: n occurrences at once are exactly n calls of Add,
// whatever the sign and size of the value (the sum is 128-bit).
func TestStatsAddN(t *testing.T) {
	vals := []int64{0, 1, -1, 7, -7, 1 << 40, -(1 << 40), math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	var one, many Stats
	for _, v := range vals {
		for n := uint64(0); n < 5; n++ {
			for k := uint64(0); k < n; k++ {
				one.Add(v)
			}
			many.AddN(v, n)
		}
	}
	if !reflect.DeepEqual(one, many) {
		t.Errorf("AddN:\n%+v\nAdd n times:\n%+v", many, one)
	}
	// A count beyond what a loop could add: the sum is v*n in 128 bits.
	var big2 Stats
	big2.AddN(math.MinInt64, math.MaxUint64)
	want := new(big.Int).Mul(big.NewInt(math.MinInt64), new(big.Int).SetUint64(math.MaxUint64))
	if got := big2.sum.big(true); got.Cmp(want) != 0 {
		t.Errorf("sum of 2^64-1 times MinInt64: %v, want %v", got, want)
	}
}

// batchValues returns slices of values that a batch's one-by-one and
// whole-slice paths must count alike: the edges of every range, runs of
// one sign, mixed signs, and none.
func batchValues(rng *rand.Rand) [][]int64 {
	edges := []int64{0, 1, 2, 127, 128, 255, 256, 1 << 32, math.MaxInt64, math.MaxInt64 - 1, -1, -128, -129, math.MinInt64, math.MinInt64 + 1}
	out := [][]int64{nil, {}, edges, {0}, {-5}, {math.MaxInt64, math.MaxInt64, math.MaxInt64}}
	for k := 0; k < 200; k++ {
		vs := make([]int64, rng.IntN(1100))
		for i := range vs {
			switch rng.IntN(6) {
			case 0:
				vs[i] = edges[rng.IntN(len(edges))]
			case 1:
				vs[i] = -rng.Int64N(1 << 40)
			case 2:
				vs[i] = int64(rng.Uint64()) // any, both signs
			default:
				vs[i] = rng.Int64N(1 << uint(1+rng.IntN(62)))
			}
		}
		if k%3 == 0 { // no negative: the loop without a detour
			for i, v := range vs {
				if v < 0 {
					vs[i] = ^v
				}
			}
		}
		out = append(out, vs)
	}
	return out
}

// TestStatsAddAll: AddAll counts a slice as Add does value by value,
// into an empty Stats and into one that already holds values.
func TestStatsAddAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	all := batchValues(rng)
	for k, vs := range all {
		for _, before := range [][]int64{nil, all[(k+7)%len(all)]} {
			var want, got Stats
			for _, v := range before {
				want.Add(v)
				got.Add(v)
			}
			for _, v := range vs {
				want.Add(v)
			}
			got.AddAll(vs)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("values %d (%d, after %d): AddAll: count %d sum %v min %d max %d; Add one by one: %d %v %d %d",
					k, len(vs), len(before), got.count, got.sum, got.min, got.max, want.count, want.sum, want.min, want.max)
			}
		}
	}
}

// BenchmarkStatsAddAll records 1Ki values at a time, as latency and
// requests hand them over: seed-like sizes (66, 1514 or 9014 bytes, in
// bursts) and durations spread over four powers of two.
//
//	go test -run '^$' -bench StatsAddAll -count 3 ./replay/hist/
func BenchmarkStatsAddAll(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes, durs := make([]int64, 1024), make([]int64, 1024)
	for i := range sizes {
		if i%16 == 0 || rng.IntN(8) == 0 {
			sizes[i] = []int64{66, 1514, 9014}[rng.IntN(3)]
		} else {
			sizes[i] = sizes[max(i-1, 0)]
		}
		durs[i] = 1000 + rng.Int64N(15000)
	}
	for _, c := range []struct {
		name string
		vs   []int64
	}{{"sizes", sizes}, {"durations", durs}} {
		b.Run(c.name, func(b *testing.B) {
			var s Stats
			for range b.N {
				s.AddAll(c.vs)
			}
			if s.Count() != uint64(b.N)*uint64(len(c.vs)) {
				b.Fatalf("count %d, want %d", s.Count(), b.N*len(c.vs))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.vs)), "ns/value")
		})
		// With a Log2 histogram of the same values, as latency keeps:
		// one after the other, and in one loop.
		for _, both := range []struct {
			name string
			add  func(*Stats, *Log2, []int64)
		}{
			{"AddAll+AddInt64s", func(s *Stats, h *Log2, vs []int64) { s.AddAll(vs); h.AddInt64s(vs) }},
			{"AddAllLog2", AddAllLog2},
		} {
			b.Run(c.name+"/"+both.name, func(b *testing.B) {
				var s Stats
				var h Log2
				for range b.N {
					both.add(&s, &h, c.vs)
				}
				if s.Count() != h.Count() || s.Count() != uint64(b.N)*uint64(len(c.vs)) {
					b.Fatalf("counts %d and %d, want %d", s.Count(), h.Count(), b.N*len(c.vs))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.vs)), "ns/value")
			})
		}
	}
}

// TestAddAllLog2 holds AddAllLog2 to AddAll and AddInt64s on the same
// values, into empty ones and ones that already hold values.
func TestAddAllLog2(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	all := batchValues(rng)
	for k, vs := range all {
		for _, before := range [][]int64{nil, all[(k+5)%len(all)]} {
			var wantS, gotS Stats
			var wantH, gotH Log2
			wantS.AddAll(before)
			wantH.AddInt64s(before)
			gotS.AddAll(before)
			gotH.AddInt64s(before)
			wantS.AddAll(vs)
			wantH.AddInt64s(vs)
			AddAllLog2(&gotS, &gotH, vs)
			if !reflect.DeepEqual(wantS, gotS) {
				t.Fatalf("values %d (%d, after %d): stats: count %d sum %v min %d max %d; AddAll: %d %v %d %d",
					k, len(vs), len(before), gotS.count, gotS.sum, gotS.min, gotS.max, wantS.count, wantS.sum, wantS.min, wantS.max)
			}
			if !reflect.DeepEqual(wantH, gotH) {
				t.Fatalf("values %d (%d, after %d): log2: %+v; AddInt64s: %+v", k, len(vs), len(before), gotH, wantH)
			}
		}
	}
}
