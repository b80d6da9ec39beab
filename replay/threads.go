package replay

import "github.com/bpftape/bpftape/format"

// threadKeys keys events by thread for the verbs that pair events of one
// thread (latency, requests): the tid, and in a merged capture also the
// host, so that equal tids of two hosts never pair.
type threadKeys struct {
	col   int               // the host column, -1 if the capture has none
	hosts map[string]uint64 // host -> number, from 1
}

func newThreadKeys(c *Capture) *threadKeys {
	return &threadKeys{col: c.R.Column(format.HostField), hosts: map[string]uint64{}}
}

// key returns the thread key of event row i of b.
func (k *threadKeys) key(b *format.Batch, i int) uint64 {
	tid := uint64(b.TID[i])
	if k.col < 0 {
		return tid
	}
	col := b.Col(k.col)
	if !col.Valid(i) {
		return tid
	}
	h := col.Str(i)
	n, ok := k.hosts[h]
	if !ok {
		n = uint64(len(k.hosts) + 1)
		k.hosts[h] = n
	}
	return n<<32 | tid
}
