// Package replaytest writes synthetic captures for the tests of replay's
// packages: any rows a test lists (Write), and streams whose events
// reproduce the histograms printed in seed 000 (the virtio-net case
// study), so that tests can check that bpftape prints the same rows from a
// file alone.
package replaytest

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"time"

	"github.com/bpftape/bpftape/format"
)

// Seed 000's histograms as log2 slot counts: counts[i] is slot i+1.
var (
	RXSize       = []uint64{0, 0, 0, 0, 0, 7, 17, 1, 1, 5, 47906, 30912, 100188, 411462, 278}
	TXPackets    = []uint64{782827, 78190, 740, 24, 1}
	VhostRXPkts  = []uint64{482291, 40457, 534, 4, 2}
	VhostRXLen   = []uint64{330, 0, 0, 0, 0, 8, 32, 9, 8, 30, 15275, 15516, 57986, 433015, 1060, 14, 4, 1}
	VhostTXPkts  = []uint64{264948, 8358, 199, 1}
	VhostTXLen   = []uint64{18, 0, 0, 0, 0, 8, 264919, 7998, 558, 5}
	USDTRXPkts   = []uint64{38820, 499564, 2200, 21}
	USDTRXLen    = []uint64{0, 0, 0, 0, 0, 4, 6, 1, 0, 4, 17564, 21277, 69310, 432271, 157, 11}
	USDTTXPkts   = []uint64{376922, 58685, 455, 0, 2}
	USDTTXLen    = []uint64{0, 0, 0, 0, 0, 0, 376921, 58541, 584, 16, 2}
	seedStartNs  = int64(5_000_000_000)
	seedGapNs    = int64(1500)
	seedTool     = "bpftape replaytest"
	seedQemuPath = "/usr/bin/qemu-system-x86_64"
)

// values draws one value per count from each log2 slot, shuffled.
func values(rng *rand.Rand, counts []uint64) []uint64 {
	var out []uint64
	for i, n := range counts {
		slot := i + 1
		for k := uint64(0); k < n; k++ {
			var v uint64
			if slot == 1 {
				v = uint64(rng.Intn(2))
			} else {
				lo := uint64(1) << (slot - 1)
				v = lo + uint64(rng.Int63n(int64(lo)))
			}
			out = append(out, v)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

type gen struct {
	w   *format.Writer
	t   int64
	rng *rand.Rand
	ev  format.Event
	err error
}

func (g *gen) emit(probe uint16, tid uint32, ints ...uint64) {
	if g.err != nil {
		return
	}
	g.t += seedGapNs/2 + g.rng.Int63n(seedGapNs)
	g.ev.Time, g.ev.Probe, g.ev.TID, g.ev.PID = g.t, probe, tid, 4242
	g.ev.CPU = uint16(tid % 2)
	g.ev.Comm = []byte("qemu-system-x86")
	g.ev.Ints = append(g.ev.Ints[:0], ints...)
	g.err = g.w.Append(&g.ev)
}

func create(path string, probes []format.Probe) (*gen, error) {
	m := &format.Meta{
		Tool: seedTool, Host: "seed-host", Kernel: "4.14.35+",
		CommandLine: []string{"bpftape", "record", "(synthetic capture of seed 000)"},
		StartWall:   time.Date(2019, 6, 1, 12, 0, 0, 0, time.UTC), StartBoot: seedStartNs,
		Probes: probes,
	}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		return nil, err
	}
	return &gen{w: w, t: seedStartNs, rng: rand.New(rand.NewSource(0))}, nil
}

func (g *gen) close() error {
	if err := g.w.Close(); g.err == nil {
		g.err = err
	}
	return g.err
}

// Files written by WriteSeed.
const (
	UprobesFile     = "seed-uprobes.arrow"
	TracepointsFile = "seed-tracepoints.arrow"
	USDTFile        = "seed-usdt.arrow"
)

// WriteSeed writes the three captures of seed 000 into dir:
// seed-uprobes.arrow (probes rx: arg2 size, rx_ret: retval, tx_ret: retval),
// seed-tracepoints.arrow (vhost_rx, vhost_tx: packets, total_len) and
// seed-usdt.arrow (rx_end: arg0 pkts, arg1 len; tx_len: arg0; tx_flush: retval).
func WriteSeed(dir string) error {
	if err := writeUprobes(filepath.Join(dir, UprobesFile)); err != nil {
		return err
	}
	if err := writeTracepoints(filepath.Join(dir, TracepointsFile)); err != nil {
		return err
	}
	return writeUSDT(filepath.Join(dir, USDTFile))
}

func writeUprobes(path string) error {
	g, err := create(path, []format.Probe{
		{Name: "rx", Kind: "uprobe", Spec: "rx=u:" + seedQemuPath + ":virtio_net_receive_rcu(arg2)", Target: seedQemuPath,
			Fields: []format.Field{{Name: "arg2", Type: format.Uint64}}},
		{Name: "rx_ret", Kind: "uretprobe", Spec: "rx_ret=ur:" + seedQemuPath + ":virtio_net_receive_rcu", Target: seedQemuPath,
			Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
		{Name: "tx_ret", Kind: "uretprobe", Spec: "tx_ret=ur:" + seedQemuPath + ":virtio_net_flush_tx", Target: seedQemuPath,
			Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
	})
	if err != nil {
		return err
	}
	sizes := values(g.rng, RXSize)
	tx := values(g.rng, TXPackets)
	for i := 0; i < max(len(sizes), len(tx)); i++ {
		if i < len(sizes) {
			g.emit(0, 4243, sizes[i])
			g.emit(1, 4243, sizes[i])
		}
		if i < len(tx) {
			g.emit(2, 4244, tx[i])
		}
	}
	return g.close()
}

func writeTracepoints(path string) error {
	fields := func(pkts string) []format.Field {
		return []format.Field{{Name: pkts, Type: format.Int32}, {Name: "total_len", Type: format.Int32}}
	}
	g, err := create(path, []format.Probe{
		{Name: "vhost_rx", Kind: "tracepoint", Spec: "t:vhost_net:vhost_net_rx_end", Fields: fields("recv_pkts")},
		{Name: "vhost_tx", Kind: "tracepoint", Spec: "t:vhost_net:vhost_net_tx_end", Fields: fields("sent_pkts")},
	})
	if err != nil {
		return err
	}
	rxp, rxl := values(g.rng, VhostRXPkts), values(g.rng, VhostRXLen)
	txp, txl := values(g.rng, VhostTXPkts), values(g.rng, VhostTXLen)
	if len(rxp) != len(rxl) || len(txp) != len(txl) {
		return fmt.Errorf("seed tracepoint histograms disagree")
	}
	for i := 0; i < max(len(rxp), len(txp)); i++ {
		if i < len(rxp) {
			g.emit(0, 901, rxp[i], rxl[i])
		}
		if i < len(txp) {
			g.emit(1, 902, txp[i], txl[i])
		}
	}
	return g.close()
}

// writeUSDT interleaves the TX requests of two threads, so that only
// per-thread sums reproduce the seed's TX length histogram.
func writeUSDT(path string) error {
	g, err := create(path, []format.Probe{
		{Name: "rx_end", Kind: "usdt", Spec: "U:" + seedQemuPath + ":qemu:virtio-net-rx-end", Target: seedQemuPath,
			Fields: []format.Field{{Name: "arg0", Type: format.Uint64}, {Name: "arg1", Type: format.Uint64}}},
		{Name: "tx_len", Kind: "usdt", Spec: "U:" + seedQemuPath + ":qemu:virtio-net-tx-get-len", Target: seedQemuPath,
			Fields: []format.Field{{Name: "arg0", Type: format.Int64}}},
		{Name: "tx_flush", Kind: "uretprobe", Spec: "tx_flush=ur:" + seedQemuPath + ":virtio_net_flush_tx(retval:s32)", Target: seedQemuPath,
			Fields: []format.Field{{Name: "retval", Type: format.Int32}}},
	})
	if err != nil {
		return err
	}
	rxp, rxl := values(g.rng, USDTRXPkts), values(g.rng, USDTRXLen)
	for i := range rxp {
		g.emit(0, 4243, rxp[i], rxl[i])
	}
	pkts, lens := values(g.rng, USDTTXPkts), values(g.rng, USDTTXLen)
	if len(pkts) != len(lens) {
		return fmt.Errorf("seed TX histograms disagree")
	}
	// Each request: max(1, pkts) per-packet lengths summing to its total,
	// then the flush return. Two threads' requests interleave event by event.
	type req struct {
		items []uint64
		ret   uint64
	}
	mk := func(i int) req {
		n := max(1, int(pkts[i]))
		total := lens[i]
		r := req{ret: pkts[i]}
		for k := 0; k < n; k++ {
			part := total / uint64(n-k)
			r.items = append(r.items, part)
			total -= part
		}
		return r
	}
	var cur [2]*req
	var pos [2]int
	next := 0
	for {
		for t := range cur {
			if cur[t] == nil && next < len(pkts) {
				r := mk(next)
				cur[t], pos[t] = &r, 0
				next++
			}
		}
		if cur[0] == nil && cur[1] == nil {
			break
		}
		t := g.rng.Intn(2)
		if cur[t] == nil {
			t = 1 - t
		}
		r := cur[t]
		tid := uint32(5000 + t)
		if pos[t] < len(r.items) {
			g.emit(1, tid, r.items[pos[t]])
			pos[t]++
		} else {
			g.emit(2, tid, r.ret)
			cur[t] = nil
		}
	}
	return g.close()
}
