package fleetsql

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
)

// query assembles a WITH query: a header comment, the CTEs, the final
// SELECT.
type query struct {
	b strings.Builder
	n int
}

func newQuery(what string, c *replay.Capture, o *Options) *query {
	q := &query{}
	fmt.Fprintf(&q.b, "-- bpftape sql: %s, from the schema of %s\n", what, strconv.Quote(c.Name))
	if o.Rows.From != 0 || o.Rows.To != 0 {
		fmt.Fprintf(&q.b, "-- --from and --to count from the capture's start, %d ns on its boot clock\n", c.Meta().StartBoot)
	}
	return q
}

// with adds CTE name AS (body), body indented already.
func (q *query) with(name, body string) {
	if q.n == 0 {
		q.b.WriteString("WITH\n")
	} else {
		q.b.WriteString(",\n")
	}
	q.n++
	fmt.Fprintf(&q.b, "  %s AS (\n%s\n  )", name, body)
}

// withRaw adds a CTE written whole (bucketsCTE).
func (q *query) withRaw(cte string) {
	if q.n == 0 {
		q.b.WriteString("WITH\n")
	} else {
		q.b.WriteString(",\n")
	}
	q.n++
	q.b.WriteString(cte)
}

func (q *query) sel(s string) string {
	q.b.WriteString("\n" + s + "\n")
	return q.b.String()
}

// HistOptions select the histogram of one probe field, as bpftape hist
// prints it by default (BCC's log2 histogram).
type HistOptions struct {
	Probe, Field string
	// Cast reinterprets the values first (s8, u8, ... u64), as hist --cast.
	Cast string
}

// Hist is the query of the log2 histogram of a field: one row per slot
// from 1 to the highest one counted (slot, low, high, count), as BCC
// prints the rows; no row when no value is counted.
func Hist(c *replay.Capture, o Options, h HistOptions) (string, error) {
	src, err := o.source()
	if err != nil {
		return "", err
	}
	f, err := resolveInt(c, h.Probe, h.Field)
	if err != nil {
		return "", err
	}
	t, cast, err := castTo(h.Cast, typeOf(f.typ))
	if err != nil {
		return "", err
	}
	where, err := o.where([]string{h.Probe}, c.Meta().StartBoot)
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("log2 histogram of %s (%s) as bpftape hist prints it", strconv.Quote(h.Probe+"."+f.name), f.typ)
	if cast {
		what += " with --cast " + h.Cast
	}
	q := newQuery(what, c, &o)
	q.with("vals", fmt.Sprintf("    SELECT %s AS v\n    FROM %s\n    %s\n      AND %s IS NOT NULL",
		castExpr(ident(f.column), t), src, where, ident(f.column)))
	q.with("counts", fmt.Sprintf("    SELECT %s AS slot, COUNT(*) AS n\n    FROM vals\n    GROUP BY 1", slotExpr("v", t, "    ")))
	q.with("tops", "    SELECT MAX(slot) AS top FROM counts")
	q.withRaw(bucketsCTE())
	return q.sel(`SELECT b.slot, b.low, b.high, COALESCE(c.n, 0) AS count
FROM tops t
JOIN buckets b ON b.slot <= t.top
LEFT JOIN counts c ON c.slot = b.slot
ORDER BY b.slot`), nil
}

// CountOptions select count's table: events per probe, or per probe and
// comm, pid or tid.
type CountOptions struct {
	// Probes are glob patterns of the probes counted, matched against the
	// capture's probes; empty counts every probe of the export.
	Probes []string
	By     string // "", "comm", "pid" or "tid"
}

// Count is the query of the events per probe (and By key), in ascending
// order of count, as bpftape count prints them.
func Count(c *replay.Capture, o Options, co CountOptions) (string, error) {
	src, err := o.source()
	if err != nil {
		return "", err
	}
	switch co.By {
	case "", "comm", "pid", "tid":
	default:
		return "", usage.Errorf("--by %q: want comm, pid or tid", co.By)
	}
	var probes []string
	if len(co.Probes) > 0 {
		for _, p := range c.Meta().Probes {
			for _, pat := range co.Probes {
				ok, err := path.Match(pat, p.Name)
				if err != nil {
					return "", usage.Errorf("probe pattern %q: %v", pat, err)
				}
				if ok {
					probes = append(probes, p.Name)
					break
				}
			}
		}
		if len(probes) == 0 {
			return "", usage.Errorf("no probe of %s matches %s (it has %s)", c.Name, strings.Join(co.Probes, " "), strings.Join(c.Meta().ProbeNames(), ", "))
		}
	}
	where, err := o.where(probes, c.Meta().StartBoot)
	if err != nil {
		return "", err
	}
	what := "events per probe as bpftape count prints them"
	cols := "probe"
	if co.By != "" {
		what = "events per probe and " + co.By + " as bpftape count --by " + co.By + " prints them"
		cols = "probe, " + co.By
	}
	q := newQuery(what, c, &o)
	return q.sel(fmt.Sprintf("SELECT %s, COUNT(*) AS count\nFROM %s\n%s\nGROUP BY %s\nORDER BY count, %s",
		cols, src, strings.Replace(where, "\n      ", "\n  ", -1), cols, cols)), nil
}

// LatencyOptions select latency's pairs: Entry and Return on one thread,
// or with Key, starts and ends with equal values of the Key fields.
type LatencyOptions struct {
	Entry, Return string
	Key           []string
	Unit          string // ns (default), us or ms
}

var unitDiv = map[string]int64{"": 1, "ns": 1, "us": 1000, "ms": 1000000}

// Latency is the query of the durations between pairs: one row per slot of
// their log2 histogram in the unit (slot, low, high, count), each with the
// totals: calls, unmatched_returns, unmatched_entries, overflows (entries
// past replay.MaxDepth open calls on a thread), restarted (a --key start
// replaced by a later one) and total_ns, the sum of the durations; one
// row with the totals alone when nothing paired.
func Latency(c *replay.Capture, o Options, l LatencyOptions) (string, error) {
	src, err := o.source()
	if err != nil {
		return "", err
	}
	div, ok := unitDiv[l.Unit]
	if !ok {
		return "", usage.Errorf("unit %q: use ns, us or ms", l.Unit)
	}
	if _, err := c.ResolveProbe(l.Entry); err != nil {
		return "", err
	}
	if _, err := c.ResolveProbe(l.Return); err != nil {
		return "", err
	}
	if l.Entry == l.Return {
		return "", usage.Errorf("entry and return are the same probe %q", l.Entry)
	}
	entry, err := probeLiteral(l.Entry)
	if err != nil {
		return "", err
	}
	keys, err := keyColumns(c, l.Key, l.Entry, l.Return)
	if err != nil {
		return "", err
	}
	where, err := o.where([]string{l.Entry, l.Return}, c.Meta().StartBoot)
	if err != nil {
		return "", err
	}
	unit := map[int64]string{1: "ns", 1000: "us", 1000000: "ms"}[div]
	what := fmt.Sprintf("latency of %s to %s, log2 histogram in %s", strconv.Quote(l.Entry), strconv.Quote(l.Return), unit)
	if len(keys) > 0 {
		what += ", paired by --key " + strings.Join(l.Key, ",")
	} else {
		what += ", paired on each thread"
	}
	q := newQuery(what, c, &o)
	step := fmt.Sprintf("CASE WHEN probe = %s THEN 1 ELSE -1 END AS step", entry)
	if len(keys) == 0 {
		threadPairs(q, src, where, step)
	} else {
		keyPairs(q, src, where, step, entry, keys)
	}
	q.with("counts", fmt.Sprintf("    SELECT %s AS slot, COUNT(*) AS n\n    FROM calls\n    GROUP BY 1", unitSlotExpr("ns", div, "    ")))
	q.with("tops", "    SELECT MAX(slot) AS top FROM counts")
	q.withRaw(bucketsCTE())
	return q.sel(`SELECT s.calls, s.unmatched_returns, s.unmatched_entries, s.overflows, s.restarted, s.total_ns,
  b.slot, b.low, b.high, COALESCE(c.n, 0) AS count
FROM summary s
CROSS JOIN tops t
LEFT JOIN buckets b ON b.slot <= t.top
LEFT JOIN counts c ON c.slot = b.slot
ORDER BY b.slot`), nil
}

// threadPairs adds the CTEs calls (ns of each call) and summary of
// latency's thread pairs: the calls open on a thread before an event are
// its running sum of steps floored at zero (the sum less the lowest sum
// before it, or 0); an entry opens the level above, a return closes the
// level open, and within a level the events alternate, so a return's
// entry is the event before it in its level.
func threadPairs(q *query, src, where, step string) {
	q.with("events", fmt.Sprintf("    SELECT host, tid, time, %s\n    FROM %s\n    %s", step, src, where))
	q.with("ordered", `    SELECT host, tid, time, step,
      ROW_NUMBER() OVER (PARTITION BY host, tid ORDER BY time, step) AS rn
    FROM events`)
	q.with("sums", `    SELECT host, tid, time, step, rn,
      SUM(step) OVER (PARTITION BY host, tid ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s
    FROM ordered`)
	q.with("lows", `    SELECT host, tid, time, step, rn, s,
      MIN(s) OVER (PARTITION BY host, tid ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS low
    FROM sums`)
	q.with("opened", `    SELECT host, tid, time, step, rn,
      s - step - CASE WHEN low < 0 THEN low ELSE 0 END AS open
    FROM lows`)
	q.with("levels", `    SELECT host, tid, time, step, rn, open,
      CASE WHEN step = 1 THEN open + 1 ELSE open END AS level
    FROM opened`)
	q.with("paired", `    SELECT step, open,
      time - LAG(time) OVER (PARTITION BY host, tid, level ORDER BY rn) AS ns
    FROM levels`)
	q.with("calls", "    SELECT ns FROM paired WHERE step = -1 AND open > 0")
	q.with("summary", fmt.Sprintf(`    SELECT calls, unmatched_returns, entries - calls - overflows AS unmatched_entries, overflows,
      0 AS restarted, total_ns
    FROM (
      SELECT
        COALESCE(SUM(CASE WHEN step = -1 AND open > 0 THEN 1 ELSE 0 END), 0) AS calls,
        COALESCE(SUM(CASE WHEN step = -1 AND open = 0 THEN 1 ELSE 0 END), 0) AS unmatched_returns,
        COALESCE(SUM(CASE WHEN step = 1 THEN 1 ELSE 0 END), 0) AS entries,
        COALESCE(SUM(CASE WHEN step = 1 AND open >= %d THEN 1 ELSE 0 END), 0) AS overflows,
        COALESCE(SUM(CASE WHEN step = -1 AND open > 0 THEN ns ELSE 0 END), 0) AS total_ns
      FROM paired
    ) AS t`, replay.MaxDepth))
}

// keyPairs adds the CTEs calls and summary of latency's --key pairs: among
// the events of one key (and host) in time order, an end pairs with the
// start just before it; a start followed by a start was restarted, one
// followed by nothing never ended.
func keyPairs(q *query, src, where, step, entry string, keys []keyColumn) {
	var sel, part []string
	for i, k := range keys {
		sel = append(sel, fmt.Sprintf("CASE WHEN probe = %s THEN %s ELSE %s END AS k%d", entry, ident(k.first), ident(k.second), i+1))
		part = append(part, fmt.Sprintf("k%d", i+1))
	}
	q.with("events", fmt.Sprintf("    SELECT host, time, %s,\n      %s\n    FROM %s\n    %s", step, strings.Join(sel, ",\n      "), src, where))
	w := "OVER (PARTITION BY host, " + strings.Join(part, ", ") + " ORDER BY time, step)"
	q.with("paired", fmt.Sprintf(`    SELECT step, time - LAG(time) %s AS ns,
      LAG(step) %s AS prev_step,
      LEAD(step) %s AS next_step
    FROM events`, w, w, w))
	q.with("calls", "    SELECT ns FROM paired WHERE step = -1 AND prev_step = 1")
	q.with("summary", `    SELECT
      COALESCE(SUM(CASE WHEN step = -1 AND prev_step = 1 THEN 1 ELSE 0 END), 0) AS calls,
      COALESCE(SUM(CASE WHEN step = -1 AND (prev_step IS NULL OR prev_step = -1) THEN 1 ELSE 0 END), 0) AS unmatched_returns,
      COALESCE(SUM(CASE WHEN step = 1 AND next_step IS NULL THEN 1 ELSE 0 END), 0) AS unmatched_entries,
      0 AS overflows,
      COALESCE(SUM(CASE WHEN step = 1 AND next_step = 1 THEN 1 ELSE 0 END), 0) AS restarted,
      COALESCE(SUM(CASE WHEN step = -1 AND prev_step = 1 THEN ns ELSE 0 END), 0) AS total_ns
    FROM paired`)
}

// keyColumn is one --key field: its column in the first probe's events
// and in the second's.
type keyColumn struct{ first, second string }

// keyColumns resolves the --key fields in both probes, which must agree on
// each field being a number or a string, as bpftape's --key requires.
func keyColumns(c *replay.Capture, names []string, first, second string) ([]keyColumn, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > replay.MaxKeyFields {
		return nil, usage.Errorf("--key: %d fields, at most %d: %w", len(names), replay.MaxKeyFields, replay.ErrKeyFields)
	}
	var keys []keyColumn
	for _, n := range names {
		a, err := resolve(c, first, n)
		if err != nil {
			return nil, fmt.Errorf("--key %s: %w", strings.Join(names, ","), err)
		}
		b, err := resolve(c, second, n)
		if err != nil {
			return nil, fmt.Errorf("--key %s: %w", strings.Join(names, ","), err)
		}
		if num(a) != num(b) {
			return nil, usage.Errorf("--key %s: %s is a %s in probe %s but a %s in probe %s", strings.Join(names, ","), n, a.typ, first, b.typ, second)
		}
		keys = append(keys, keyColumn{a.column, b.column})
	}
	return keys, nil
}

// num reports whether a key field is compared as a number (an integer or
// a stack, whose export is its folded frames, equal for equal stacks).
func num(f field) bool { return f.typ.IsInt() || f.typ.IsStack() }

// RequestsOptions select requests' totals: ItemField of ItemProbe's
// events summed on a thread (or per Key, or per host with Global) until
// an EndProbe event.
type RequestsOptions struct {
	ItemProbe, ItemField string
	EndProbe, EndField   string
	EndCast              string // as requests --end-cast
	Global               bool
	Key                  []string
}

// Requests is the query of per-request totals: one row per slot of the
// end values' histogram (hist 'end') and of the totals' (hist 'total'),
// each with the totals: requests, ends_without_items (skipped, as bpftape
// skips them), incomplete and incomplete_items (items never followed by an
// end); one row with the totals alone when no request ended.
//
// A total wraps modulo 2^64, as bpftape's 64-bit sum does, and is bucketed
// as an unsigned value.
func Requests(c *replay.Capture, o Options, r RequestsOptions) (string, error) {
	src, err := o.source()
	if err != nil {
		return "", err
	}
	item, err := resolveInt(c, r.ItemProbe, r.ItemField)
	if err != nil {
		return "", fmt.Errorf("item: %w", err)
	}
	end, err := resolveInt(c, r.EndProbe, r.EndField)
	if err != nil {
		return "", fmt.Errorf("end: %w", err)
	}
	if r.ItemProbe == r.EndProbe {
		return "", usage.Errorf("item and end are the same probe %q", r.ItemProbe)
	}
	if r.Global && len(r.Key) > 0 {
		return "", usage.Errorf("--key and --global exclude each other")
	}
	et, cast, err := castTo(r.EndCast, typeOf(end.typ))
	if err != nil {
		return "", err
	}
	itemLit, err := probeLiteral(r.ItemProbe)
	if err != nil {
		return "", err
	}
	endLit, err := probeLiteral(r.EndProbe)
	if err != nil {
		return "", err
	}
	keys, err := keyColumns(c, r.Key, r.ItemProbe, r.EndProbe)
	if err != nil {
		return "", err
	}
	where, err := o.where([]string{r.ItemProbe, r.EndProbe}, c.Meta().StartBoot)
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("per-request totals of %s until %s", strconv.Quote(r.ItemProbe+"."+item.name), strconv.Quote(r.EndProbe+"."+end.name))
	if cast {
		what += " with --end-cast " + r.EndCast
	}
	// sel are the columns of the events that group them into requests.
	var sel, group []string
	switch {
	case r.Global:
		sel, group = []string{"host"}, []string{"host"}
		what += ", one sum per host (--global)"
	case len(keys) > 0:
		sel, group = []string{"host"}, []string{"host"}
		for i, k := range keys {
			sel = append(sel, fmt.Sprintf("CASE WHEN probe = %s THEN %s ELSE %s END AS k%d", itemLit, ident(k.first), ident(k.second), i+1))
			group = append(group, fmt.Sprintf("k%d", i+1))
		}
		what += ", by --key " + strings.Join(r.Key, ",")
	default:
		sel, group = []string{"host", "tid"}, []string{"host", "tid"}
		what += ", on each thread"
	}
	g := strings.Join(group, ", ")
	q := newQuery(what, c, &o)
	q.with("events", fmt.Sprintf(`    SELECT %s, time,
      CASE WHEN probe = %s THEN 1 ELSE 0 END AS is_item,
      CASE WHEN probe = %s THEN CAST(%s AS DECIMAL(38,0)) END AS item,
      CASE WHEN probe = %s THEN %s END AS endv
    FROM %s
    %s`, strings.Join(sel, ", "), itemLit, itemLit, ident(item.column), endLit, castExpr(ident(end.column), et), src, where))
	q.with("segments", fmt.Sprintf(`    SELECT %s, is_item, item, endv,
      COALESCE(SUM(1 - is_item) OVER (PARTITION BY %s ORDER BY time, is_item DESC
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS seg
    FROM events`, g, g))
	q.with("requests", fmt.Sprintf(`    SELECT SUM(is_item) AS items, SUM(item) AS total, MAX(endv) AS endv, SUM(1 - is_item) AS ends
    FROM segments
    GROUP BY %s, seg`, g))
	q.with("summary", `    SELECT
      COALESCE(SUM(CASE WHEN ends = 1 AND items > 0 THEN 1 ELSE 0 END), 0) AS requests,
      COALESCE(SUM(CASE WHEN ends = 1 AND items = 0 THEN 1 ELSE 0 END), 0) AS ends_without_items,
      COALESCE(SUM(CASE WHEN ends = 0 THEN 1 ELSE 0 END), 0) AS incomplete,
      COALESCE(SUM(CASE WHEN ends = 0 THEN items ELSE 0 END), 0) AS incomplete_items
    FROM requests`)
	wrapped := fmt.Sprintf("((total %% %s) + %s) %% %s", two64, two64, two64)
	q.with("slots", fmt.Sprintf(`    SELECT 'end' AS hist, %s AS slot
    FROM requests WHERE ends = 1 AND items > 0
    UNION ALL
    SELECT 'total' AS hist, %s AS slot
    FROM (SELECT %s AS total FROM requests WHERE ends = 1 AND items > 0) AS w`,
		slotExpr("endv", et, "    "), slotExpr("total", valueType{bits: 64}, "    "), wrapped))
	q.with("counts", "    SELECT hist, slot, COUNT(*) AS n FROM slots GROUP BY hist, slot")
	q.with("tops", "    SELECT hist, MAX(slot) AS top FROM counts GROUP BY hist")
	q.withRaw(bucketsCTE())
	return q.sel(`SELECT s.requests, s.ends_without_items, s.incomplete, s.incomplete_items,
  t.hist, b.slot, b.low, b.high, COALESCE(c.n, 0) AS count
FROM summary s
LEFT JOIN tops t ON TRUE
LEFT JOIN buckets b ON b.slot <= t.top
LEFT JOIN counts c ON c.hist = t.hist AND c.slot = b.slot
ORDER BY t.hist, b.slot`), nil
}
