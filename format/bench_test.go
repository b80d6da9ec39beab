package format

import (
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// realisticStream generates seed-like events: three probes of a virtio-net
// RX/TX path (one or two integers each) on a handful of threads, in bursts
// of packets whose sizes repeat (MTU frames, ACKs) with some noise.
type realisticStream struct {
	rng   *rand.Rand
	t     int64
	burst int
	size  uint64
	tid   uint32
	ev    Event
}

var streamComms = [][]byte{[]byte("qemu-system-x86"), []byte("CPU 0/KVM"), []byte("CPU 1/KVM"), []byte("vhost-4242")}

func newRealisticStream() *realisticStream {
	s := &realisticStream{rng: rand.New(rand.NewSource(7)), t: 1e9}
	s.ev.Ints = make([]uint64, 2)
	return s
}

func (s *realisticStream) next() *Event {
	r := s.rng
	if s.burst == 0 {
		s.burst = 1 + r.Intn(64)
		s.t += 20_000 + r.Int63n(500_000) // idle between bursts
		s.tid = uint32(r.Intn(len(streamComms)))
		switch x := r.Intn(10); {
		case x < 6:
			s.size = 1514
		case x < 8:
			s.size = 66
		case x < 9:
			s.size = 9014
		default:
			s.size = 64 + uint64(r.Intn(16384))
		}
	}
	s.burst--
	s.t += 500 + r.Int63n(3000)
	e := &s.ev
	e.Time = s.t
	e.PID = 4242
	e.TID = 4242 + s.tid
	e.CPU = uint16(s.tid % 2)
	e.Comm = streamComms[s.tid]
	e.Probe = uint16(r.Intn(3))
	size := s.size
	if r.Intn(20) == 0 {
		size = 64 + uint64(r.Intn(1500))
	}
	e.Ints[0] = size
	if e.Probe == 2 {
		e.Ints[0] = uint64(1 + r.Intn(3)) // packets per TX flush
	}
	return e
}

// pregenerate makes n events up front so that benchmarks measure the
// writer, not the generator; n must be a power of two.
func pregenerate(n int) []Event {
	s := newRealisticStream()
	evs := make([]Event, n)
	for i := range evs {
		e := *s.next()
		e.Ints = append([]uint64(nil), e.Ints...)
		evs[i] = e
	}
	return evs
}

func streamMeta() *Meta {
	return &Meta{Tool: "bench", Probes: []Probe{
		{Name: "rx", Kind: "uprobe", Fields: []Field{{Name: "arg2", Type: Uint64}}},
		{Name: "rx_ret", Kind: "uretprobe", Fields: []Field{{Name: "retval", Type: Int64}}},
		{Name: "tx_ret", Kind: "uretprobe", Fields: []Field{{Name: "retval", Type: Int64}}},
	}}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriter appends a realistic stream and writes compressed batches;
// it reports process CPU per event (append + encode + compress + write, on
// both goroutines) and bytes per event on disk.
//
//	go test -run '^$' -bench Writer -benchtime 2000000x ./format/
func BenchmarkWriter(b *testing.B) {
	for _, comp := range []Compression{Zstd, LZ4, None} {
		b.Run(string(comp), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.arrow")
			evs := pregenerate(1 << 20)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			w, err := Create(path, streamMeta(), WriterOptions{Compression: comp})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				e := &evs[i&(len(evs)-1)]
				e.Time += int64(i>>20) * 1e9 // keep time increasing on each lap
				if err := w.Append(e); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			st, _ := os.Stat(path)
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
			b.ReportMetric(float64(st.Size())/float64(b.N), "bytes/event")
		})
	}
}

// BenchmarkReader scans a realistic capture, touching every column.
func BenchmarkReader(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.arrow")
	s := newRealisticStream()
	const n = 1 << 20
	w, err := Create(path, streamMeta(), WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		w.Append(s.next())
	}
	w.Close()
	b.ResetTimer()
	var sum int64
	for i := 0; i < b.N; i++ {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		col := r.Column("arg2")
		for r.Next() {
			bt := r.Batch()
			c := bt.Col(col)
			for j := 0; j < bt.Len; j++ {
				sum += bt.Time[j] + int64(bt.TID[j])
				if c.Valid(j) {
					sum += c.Int(j)
				}
			}
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	_ = sum
}
