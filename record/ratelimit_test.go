package record

import (
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/probespec"
)

// fakeTokens is the tokens map: a count per probe id.
type fakeTokens map[uint16]int64

func (f fakeTokens) AddTokens(id uint16, n int64) int64 { f[id] += n; return f[id] }
func (f fakeTokens) TokensLeft(id uint16) int64         { return f[id] }

// take is the program's side: an event takes a token if one is left.
func (f fakeTokens) take(id uint16) bool {
	if f[id] > 0 {
		f[id]--
		return true
	}
	return false
}

// TestRateLimiterRefill drives the refills against a probe that fires at
// ten times its rate, a millisecond at a time: what it records over 10 s
// is the rate's worth, give or take a tick's; with refills every 350 ms
// rather than every RateTick, each still gives at most a tick's worth, so it
// records less, never more. A probe that fires below its rate records every
// event, and a rate below one a second holds.
func TestRateLimiterRefill(t *testing.T) {
	const secs = 10
	for _, c := range []struct {
		name        string
		rate, fires float64 // events a second
		every       time.Duration
		min, max    int64
	}{
		{"1000/s", 1000, 10000, RateTick, secs*1000 - 100, secs*1000 + 100},
		{"15/s", 15, 150, RateTick, secs*15 - 2, secs*15 + 2},
		{"late refills", 1000, 10000, 350 * time.Millisecond, secs * 1000 / 350 * 100, secs*1000/350*100 + 100},
		{"below the rate", 1000, 500, RateTick, secs * 500, secs * 500},
		{"0.5/s", 0.5, 100, RateTick, secs/2 - 1, secs/2 + 1},
	} {
		tok := fakeTokens{}
		t0 := time.Unix(0, 0)
		l := newRateLimiter(tok, []float64{0, c.rate}, t0)
		var recorded, fired int64
		var owed float64
		next := t0.Add(c.every)
		for ms := 1; ms <= secs*1000; ms++ {
			now := t0.Add(time.Duration(ms) * time.Millisecond)
			for owed += c.fires / 1000; owed >= 1; owed-- {
				fired++
				if tok.take(1) {
					recorded++
				}
			}
			if !now.Before(next) {
				l.refill(now)
				next = now.Add(c.every)
			}
		}
		t.Logf("%s: %d of %d events recorded", c.name, recorded, fired)
		if recorded < c.min || recorded > c.max {
			t.Errorf("%s: %d of %d events recorded, want %d to %d", c.name, recorded, fired, c.min, c.max)
		}
		if tok[0] != 0 {
			t.Errorf("%s: the probe without a rate got %d tokens", c.name, tok[0])
		}
	}
	if newRateLimiter(fakeTokens{}, []float64{0, 0}, time.Now()) != nil {
		t.Error("a limiter without rates")
	}
}

// TestProbeRates resolves --max-rate: for every probe, for one by name or
// as typed (a pattern's for each probe it expanded to), the last winning,
// and refuses a name no probe has and a rate that is not above 0.
func TestProbeRates(t *testing.T) {
	parse := func(s string) *probespec.Spec {
		p, err := probespec.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	rx, tx, vfs := parse("rx=u:./app:rx(arg0)"), parse("u:./app:tx"), parse("k:vfs_*")
	typed := []*probespec.Spec{rx, tx, vfs}
	specs := []*probespec.Spec{rx, tx, vfs.Expand("vfs_read"), vfs.Expand("vfs_write")}
	names := []string{"rx", "tx", "vfs_read", "vfs_write"}
	for _, c := range []struct {
		all   float64
		rates []ProbeRate
		want  []float64
		err   string
	}{
		{0, nil, []float64{0, 0, 0, 0}, ""},
		{100, nil, []float64{100, 100, 100, 100}, ""},
		{100, []ProbeRate{{"rx", 5}}, []float64{5, 100, 100, 100}, ""},
		{0, []ProbeRate{{"u:./app:tx", 7}, {"k:vfs_*", 2.5}}, []float64{0, 7, 2.5, 2.5}, ""},
		{0, []ProbeRate{{"rx=u:./app:rx(arg0)", 1}, {"rx", 3}, {"vfs_write", 9}}, []float64{3, 0, 0, 9}, ""},
		{0, []ProbeRate{{"nope", 1}}, nil, `no probe is named "nope"`},
		{0, []ProbeRate{{"rx", 0}}, nil, "want a rate above 0"},
		{-1, nil, nil, "want a rate above 0"},
	} {
		got, err := probeRates(&Options{MaxRate: c.all, MaxRates: c.rates}, typed, specs, names)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %v: error %v, want %q", c.all, c.rates, err, c.err)
			}
		case err != nil:
			t.Errorf("%v %v: %v", c.all, c.rates, err)
		default:
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Errorf("%v %v: rates %v, want %v", c.all, c.rates, got, c.want)
					break
				}
			}
		}
	}
}
