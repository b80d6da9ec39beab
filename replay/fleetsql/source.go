package fleetsql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay"
)

// DefaultPath is the folder a query reads when Options names neither a
// table nor a path: the one `bpftape export --partition -o fleet/` writes.
const DefaultPath = "fleet"

// Options say where a query reads its rows and which events it keeps.
type Options struct {
	// Table is a table or view name (a Spark temporary view, a Trino
	// catalog.schema.table) over the partitioned export; "" reads Path
	// with DuckDB's read_parquet.
	Table string
	// Path is the folder `export --partition` wrote (a local folder or an
	// s3:// URL DuckDB's httpfs reads); "" is DefaultPath.
	Path string
	// Rows keeps the events of these processes, threads and commands, in
	// the window From to To after the start of the capture the query is
	// written for (see the package doc).
	Rows replay.RowFilter
}

var (
	// ErrUnportable is a name or value that one of the engines would
	// read differently in a string literal: a quote or a backslash.
	ErrUnportable = errors.New("a quote or backslash in a string literal reads differently in Spark SQL than in DuckDB and Trino")
	// ErrTable is a --table that is not a plain, possibly dotted, name.
	ErrTable = errors.New("want a table or view name: letters, digits and _, parts joined by dots")
	// ErrNotInteger is a field a histogram or a sum cannot take.
	ErrNotInteger = errors.New("not an integer field")
)

// ident quotes a column name as DuckDB, Trino and ANSI Spark SQL do.
func ident(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// literal is s as a string literal, refused when the engines would read it
// differently.
func literal(s string) (string, error) {
	if strings.ContainsAny(s, `'\`) {
		return "", usage.Errorf("%q: %w", s, ErrUnportable)
	}
	return "'" + s + "'", nil
}

// source is what the query reads from: the table, or read_parquet of the
// part files under the path.
func (o *Options) source() (string, error) {
	if o.Table != "" {
		for _, part := range strings.Split(o.Table, ".") {
			if part == "" || strings.IndexFunc(part, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
			}) >= 0 {
				return "", usage.Errorf("--table %q: %w", o.Table, ErrTable)
			}
		}
		return o.Table, nil
	}
	path := o.Path
	if path == "" {
		path = DefaultPath
	}
	glob, err := literal(strings.TrimRight(path, "/") + "/*/*/*.parquet")
	if err != nil {
		return "", fmt.Errorf("--path: %w", err)
	}
	return "read_parquet(" + glob + ", hive_partitioning=true, union_by_name=true)", nil
}

// where is the WHERE clause that keeps the events (never loss records) of
// probes that pass o.Rows, measuring --from and --to from start, the
// capture's start on the boot clock.
func (o *Options) where(probes []string, start int64) (string, error) {
	conds := []string{"lost IS NULL"}
	in := func(col string, vals []string) string {
		if len(vals) == 1 {
			return col + " = " + vals[0]
		}
		return col + " IN (" + strings.Join(vals, ", ") + ")"
	}
	if len(probes) > 0 {
		var lits []string
		for _, p := range probes {
			l, err := literal(p)
			if err != nil {
				return "", fmt.Errorf("probe %w", err)
			}
			lits = append(lits, l)
		}
		conds = append(conds, in("probe", lits))
	}
	ids := func(col string, vs []uint32) {
		if len(vs) == 0 {
			return
		}
		var s []string
		for _, v := range vs {
			s = append(s, strconv.FormatUint(uint64(v), 10))
		}
		conds = append(conds, in(col, s))
	}
	f := &o.Rows
	ids("pid", f.PIDs)
	ids("tid", f.TIDs)
	if len(f.Comms) > 0 {
		var lits []string
		for _, c := range f.Comms {
			l, err := literal(c)
			if err != nil {
				return "", fmt.Errorf("--comm %w", err)
			}
			lits = append(lits, l)
		}
		conds = append(conds, in("comm", lits))
	}
	if f.From != 0 {
		conds = append(conds, fmt.Sprintf("time >= %d", start+int64(f.From)))
	}
	if f.To != 0 {
		conds = append(conds, fmt.Sprintf("time < %d", start+int64(f.To)))
	}
	return "WHERE " + strings.Join(conds, "\n      AND "), nil
}

// field is a probe field's column in the export and its type.
type field struct {
	probe, name, column string
	typ                 format.Type
}

// resolve finds field name of probe in c (argN naming a parameter too, as
// the verbs take it). The host field a merge adds is not a column of a
// partitioned export (it is the host folder).
func resolve(c *replay.Capture, probe, name string) (field, error) {
	ref, err := c.Resolve(probe, name)
	if err != nil {
		return field{}, err
	}
	m := c.Meta()
	_, p := m.Probe(probe)
	fi := p.Field(ref.Field)
	if fi == m.HostFieldIndex(p) {
		return field{}, usage.Errorf("%s.%s is the host of a merged capture: a partitioned export has it as the host column, which the queries group by already", probe, ref.Field)
	}
	f := p.Fields[fi]
	return field{probe: probe, name: f.Name, column: f.Column, typ: f.Type}, nil
}

// resolveInt is resolve of an integer field.
func resolveInt(c *replay.Capture, probe, name string) (field, error) {
	f, err := resolve(c, probe, name)
	if err != nil {
		return f, err
	}
	if !f.typ.IsInt() {
		return f, usage.Errorf("%s.%s is a %s: %w", probe, f.name, f.typ, ErrNotInteger)
	}
	return f, nil
}

// probeLiteral is the string literal of probe name p, checked.
func probeLiteral(p string) (string, error) {
	l, err := literal(p)
	if err != nil {
		return "", fmt.Errorf("probe %w", err)
	}
	return l, nil
}
