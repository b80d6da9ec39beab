package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
)

// MaxKeyFields bounds the fields of a --key.
const MaxKeyFields = 8

// ErrKeyFields is the error of a --key list that names no field, an
// empty one, one twice or more than MaxKeyFields.
var ErrKeyFields = errors.New("bad --key")

// ParseKeyFields parses --key's FIELD[,FIELD...]: the fields whose values
// pair a start event with its end event.
func ParseKeyFields(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usage.Errorf("--key %q: want FIELD[,FIELD...]: %w", s, ErrKeyFields)
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxKeyFields {
		return nil, usage.Errorf("--key %q: %d fields, at most %d: %w", s, len(parts), MaxKeyFields, ErrKeyFields)
	}
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, usage.Errorf("--key %q: an empty field name: %w", s, ErrKeyFields)
		}
		for _, n := range names {
			if n == p {
				return nil, usage.Errorf("--key %q: %s twice: %w", s, p, ErrKeyFields)
			}
		}
		names = append(names, p)
	}
	return names, nil
}

// keyInts is how many integer fields a pairKey holds inline; more, and
// string fields, are encoded into its rest.
const keyInts = 4

// pairKey is the values of the --key fields of one event, and in a merged
// capture its host: small and fixed, so that pairing by key costs a map
// lookup per event, not a formatted string.
type pairKey struct {
	host uint64
	ints [keyInts]int64
	rest string
}

// pairKeys reads the --key fields of the events of the probes being
// paired.
type pairKeys struct {
	names []string
	// refs[probe] are the key fields of probe, in the order of names; nil
	// for the probes not paired.
	refs    [][]Ref
	threads *threadKeys
	buf     []byte
}

// newPairKeys resolves the key fields names against each of probes: every
// probe must have every field, with the same kind (integer or string) in
// all of them.
func newPairKeys(c *Capture, names []string, probes ...string) (*pairKeys, error) {
	if len(names) == 0 || len(names) > MaxKeyFields {
		return nil, usage.Errorf("--key: %d fields, want 1 to %d: %w", len(names), MaxKeyFields, ErrKeyFields)
	}
	k := &pairKeys{names: names, refs: make([][]Ref, len(c.Meta().Probes)), threads: newThreadKeys(c)}
	for _, probe := range probes {
		var refs []Ref
		for j, name := range names {
			r, err := c.Resolve(probe, name)
			if err != nil {
				return nil, fmt.Errorf("--key %s: %w", strings.Join(names, ","), err)
			}
			for _, other := range k.refs {
				if len(other) > j && isKeyInt(&other[j]) != isKeyInt(&r) {
					return nil, usage.Errorf("--key %s: %s is %s in probe %s but %s in probe %s",
						strings.Join(names, ","), name, kindOf(&other[j]), other[j].Probe, kindOf(&r), probe)
				}
			}
			refs = append(refs, r)
		}
		k.refs[refs[0].probe] = refs
	}
	return k, nil
}

// isKeyInt reports whether a key field is a number: an integer, or the
// id of a stack (a key of identical stacks).
func isKeyInt(r *Ref) bool { return r.IsInt() || r.typ.IsStack() }

func kindOf(r *Ref) string {
	if isKeyInt(r) {
		return "an integer"
	}
	return "a string"
}

// key returns the key of event row i of b, one of the paired probes'.
func (k *pairKeys) key(b *format.Batch, i int) pairKey {
	var key pairKey
	key.host = k.threads.host(b, i)
	refs := k.refs[b.Probe[i]]
	n := 0
	buf := k.buf[:0]
	for j := range refs {
		col := b.Col(refs[j].col)
		switch {
		case !isKeyInt(&refs[j]):
			s := col.Str(i)
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		case n < keyInts:
			key.ints[n] = col.Int(i)
			n++
		default:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(col.Int(i)))
		}
	}
	if len(buf) > 0 {
		key.rest = string(buf)
	}
	k.buf = buf
	return key
}
