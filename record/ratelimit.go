package record

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/humanfmt"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
)

// RateTick is how often the rate limits' tokens are refilled (Options.MaxRate):
// each probe gets its rate's worth of the time since the last refill, at
// most RateTick's worth ahead (rateBurst), so that a probe idle for a while
// does not then record a burst past its rate.
const RateTick = 100 * time.Millisecond

// tokenCounts is what the rate limiter needs of the BPF objects.
type tokenCounts interface {
	AddTokens(probeID uint16, n int64) int64
	TokensLeft(probeID uint16) int64
}

// rateLimiter refills the tokens of the rate-limited probes on a ticker.
// The programs take them (bpf.SpecRateLimit), so the limit holds in the
// kernel whatever the recorder does: a refill that comes late only makes
// them reject more.
type rateLimiter struct {
	tokens tokenCounts
	probes []limitedProbe
	last   time.Time
	stop   chan struct{}
	done   sync.WaitGroup
}

type limitedProbe struct {
	id     uint16
	perSec float64
	burst  int64   // the most tokens a probe holds: a tick's worth, at least 1
	credit float64 // the fraction of a token not yet given
}

// rateBurst is the most tokens a probe limited to perSec events a second
// holds: RateTick's worth, at least one.
func rateBurst(perSec float64) int64 {
	return max(1, int64(math.Ceil(perSec*RateTick.Seconds())))
}

// newRateLimiter returns the limiter of the probes whose rates (by probe
// id) are above 0, each holding its first tick's worth of tokens; nil if
// none is limited.
func newRateLimiter(tokens tokenCounts, rates []float64, now time.Time) *rateLimiter {
	l := &rateLimiter{tokens: tokens, last: now}
	for id, r := range rates {
		if r <= 0 {
			continue
		}
		p := limitedProbe{id: uint16(id), perSec: r, burst: rateBurst(r)}
		tokens.AddTokens(p.id, p.burst-tokens.TokensLeft(p.id))
		l.probes = append(l.probes, p)
	}
	if len(l.probes) == 0 {
		return nil
	}
	return l
}

// startRateLimiter fills the tokens of the rate-limited probes and refills
// them every RateTick until close; nil if no probe is limited.
func startRateLimiter(tokens tokenCounts, rates []float64) *rateLimiter {
	l := newRateLimiter(tokens, rates, time.Now())
	if l == nil {
		return nil
	}
	l.stop = make(chan struct{})
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		t := time.NewTicker(RateTick)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case now := <-t.C:
				l.refill(now)
			}
		}
	}()
	return l
}

// refill gives each probe its rate's worth of the time since the last
// refill, keeping the fraction of a token for the next, up to its burst:
// tokens the probe did not use (it fired less than its rate) are not
// saved up. A count below zero (CPUs that took the last token at once) is
// paid back first.
func (l *rateLimiter) refill(now time.Time) {
	dt := now.Sub(l.last).Seconds()
	l.last = now
	if dt <= 0 {
		return
	}
	for i := range l.probes {
		p := &l.probes[i]
		p.credit += p.perSec * dt
		n := int64(p.credit)
		p.credit -= float64(n)
		if room := p.burst - l.tokens.TokensLeft(p.id); n > room {
			n = max(room, 0)
		}
		if n > 0 {
			l.tokens.AddTokens(p.id, n)
		}
	}
}

// close stops the refills; a nil limiter does nothing.
func (l *rateLimiter) close() {
	if l == nil || l.stop == nil {
		return
	}
	close(l.stop)
	l.done.Wait()
	l.stop = nil
}

// probeRates resolves Options.MaxRate and MaxRates into a rate by probe id
// (0: none) for the probes specs, named names, expanded from the probe
// arguments typed (ExpandWildcards keeps the specs that are no pattern, and
// a pattern's probes carry it in Pattern).
func probeRates(o *Options, typed, specs []*probespec.Spec, names []string) ([]float64, error) {
	if o.MaxRate < 0 || math.IsNaN(o.MaxRate) || math.IsInf(o.MaxRate, 0) {
		return nil, usage.Errorf("--max-rate %v: want a rate above 0", o.MaxRate)
	}
	rates := make([]float64, len(specs))
	if o.MaxRate == 0 && len(o.MaxRates) == 0 {
		return rates, nil
	}
	// from[i] is the argument as typed that probe i came from.
	from := make([]string, len(specs))
	idx := map[*probespec.Spec]int{}
	for j, s := range typed {
		idx[s] = j
	}
	for i, s := range specs {
		if j, ok := idx[s]; ok {
			from[i] = typed[j].Text
			continue
		}
		for _, t := range typed {
			if t.Wildcard() && t.Kind == s.Kind && t.Symbol == s.Pattern {
				from[i] = t.Text
				break
			}
		}
	}
	for i := range rates {
		rates[i] = o.MaxRate
	}
	for _, pr := range o.MaxRates {
		if pr.PerSecond <= 0 || math.IsNaN(pr.PerSecond) || math.IsInf(pr.PerSecond, 0) {
			return nil, usage.Errorf("--max-rate %s=%v: want a rate above 0", pr.Probe, pr.PerSecond)
		}
		matched := false
		for i := range specs {
			if pr.Probe == names[i] || pr.Probe == from[i] {
				rates[i] = pr.PerSecond
				matched = true
			}
		}
		if !matched {
			shown := names
			more := ""
			if len(shown) > 10 {
				shown, more = shown[:10], fmt.Sprintf(" and %d more", len(names)-10)
			}
			return nil, usage.Errorf("--max-rate %s=%s/s: no probe is named %q, nor typed so (the probes: %s%s)",
				pr.Probe, humanfmt.Rate(pr.PerSecond), pr.Probe, strings.Join(shown, ", "), more)
		}
	}
	return rates, nil
}

var _ tokenCounts = (*bpf.Objects)(nil)
