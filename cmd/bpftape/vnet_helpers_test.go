package main

import (
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// writeVnet writes a capture shaped like the virtio-net demo (RX entry and
// return with sizes, TX per-packet lengths and flush returns, on two
// threads) with a loss record every 4000 events, for host.
func writeVnet(t *testing.T, path, host string, n int) {
	t.Helper()
	const qemu = "/usr/bin/qemu-system-x86_64"
	m := &format.Meta{Host: host, Kernel: "6.1.0-18-amd64", Tool: "bpftape test",
		CommandLine: []string{"bpftape", "record", "-p", "4242", "rx=u:qemu-system-x86_64:virtio_net_receive_rcu(arg2)", "..."},
		StartBoot:   7e9, StartWall: time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC),
		Extra: map[string]string{"pid": "4242", "ring_size": "8192"},
		Probes: []format.Probe{
			{Name: "rx", Kind: "uprobe", Spec: "rx=u:qemu-system-x86_64:virtio_net_receive_rcu(arg2)", Target: qemu, BuildID: "1f2e3d", Fields: []format.Field{{Name: "arg2", Type: format.Uint64}}},
			{Name: "rx_ret", Kind: "uretprobe", Spec: "rx_ret=ur:qemu-system-x86_64:virtio_net_receive_rcu", Target: qemu, BuildID: "1f2e3d", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
			{Name: "tx_len", Kind: "usdt", Spec: "tx_len=U:qemu-system-x86_64:qemu:virtio-net-tx-get-len", Target: qemu, BuildID: "1f2e3d", Fields: []format.Field{{Name: "arg0", Type: format.Int64}}},
			{Name: "tx_ret", Kind: "uretprobe", Spec: "tx_ret=ur:qemu-system-x86_64:virtio_net_flush_tx(retval:s32)", Target: qemu, BuildID: "1f2e3d", Fields: []format.Field{{Name: "retval", Type: format.Int32}}},
		}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 4096})
	if err != nil {
		t.Fatal(err)
	}
	tm := m.StartBoot + 5e6
	ev := func(p uint16, tid uint32, v uint64) {
		if err := w.Append(&format.Event{Time: tm, CPU: uint16(tid % 2), PID: 4242, TID: tid, Probe: p, Comm: []byte("qemu-system-x86"), Ints: []uint64{v}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		size := uint64(1500 + (i*7919)%8000)
		if i%97 == 0 {
			size = 64
		}
		tm += 20_000
		ev(0, 4243, size)
		// Latency grows in the middle of the capture: a visible band on the heat map.
		lat := int64(800 + (i*31)%900)
		if i > n/3 && i < n/2 {
			lat *= 20
		}
		tm += lat
		ev(1, 4243, size)
		if i%3 == 0 {
			k := 1 + i%4
			for j := 0; j < k; j++ {
				tm += 300
				ev(2, 4244, uint64(60+(i+j)%1400))
			}
			tm += 500
			ev(3, 4244, uint64(k))
		}
		if i%4000 == 3999 {
			if err := w.Lost(uint16(i%2), uint16(i%2), tm, uint64(100+i%50)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
