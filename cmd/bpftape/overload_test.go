//go:build linux && amd64

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestRecordOverload overloads the recorder: two workloads pinned to CPUs
// 0 and 1 call tick() as fast as they can, system-wide, into a 64 KiB ring
// buffer, while the capture goes to a FIFO that the test reads slowly (a
// slow disk): the writer blocks, the ring fills and the kernel drops
// events. The recorder must stay within a memory bound and count every
// lost event per CPU and probe — recorded + lost == generated for each —
// and hist must warn with the exact count.
func TestRecordOverload(t *testing.T) {
	bin, probes := bpftapeBin(t)
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatal("taskset (util-linux) is needed to pin the workloads")
	}
	const n = 2000000         // tick() calls per workload
	const rssBound = 64 << 10 // KiB
	dir := t.TempDir()
	fifo, capture, ready := filepath.Join(dir, "fifo"), filepath.Join(dir, "c.arrow"), filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	// The slow disk: 16 KiB every 25 ms (640 KiB/s) until told to hurry.
	var hurry atomic.Bool
	readDone := make(chan error, 1)
	go func() {
		in, err := os.Open(fifo)
		if err != nil {
			readDone <- err
			return
		}
		defer in.Close()
		out, err := os.Create(capture)
		if err != nil {
			readDone <- err
			return
		}
		defer out.Close()
		buf := make([]byte, 16<<10)
		for {
			k, err := in.Read(buf)
			if _, werr := out.Write(buf[:k]); werr != nil {
				readDone <- werr
				return
			}
			if err == io.EOF {
				readDone <- nil
				return
			}
			if err != nil {
				readDone <- err
				return
			}
			if !hurry.Load() {
				time.Sleep(25 * time.Millisecond)
			}
		}
	}()

	rec := exec.Command(bin, "record", "-o", fifo, "--ready-file", ready, "--ringbuf-size", "64K",
		"tick=u:"+probes+":tick(arg0)", "ret=ur:"+probes+":tick")
	recDone := make(chan result, 1)
	go func() { recDone <- runBin(t, rec) }()
	waitFile(t, ready, 10*time.Second)
	pid := rec.Process.Pid

	var peak int64
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		for {
			if _, hwm := rssKiB(pid); hwm > peak {
				peak = hwm
			}
			select {
			case <-stopRSS:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	start := time.Now()
	var works []*exec.Cmd
	for cpu := 0; cpu < 2; cpu++ {
		w := exec.Command(taskset, "-c", strconv.Itoa(cpu), probes, "burst", strconv.Itoa(n))
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		works = append(works, w)
	}
	for _, w := range works {
		if err := w.Wait(); err != nil {
			t.Fatalf("workload: %v", err)
		}
	}
	generating := time.Since(start)
	rec.Process.Signal(syscall.SIGINT)
	hurry.Store(true)
	r := <-recDone
	close(stopRSS)
	<-rssDone
	if err := <-readDone; err != nil {
		t.Fatal(err)
	}
	if r.code != 0 {
		t.Fatalf("record: exit %d", r.code)
	}

	// recorded + lost == generated, per probe and per CPU.
	rd, err := format.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		probe string
		cpu   uint16
	}
	recorded, lost := map[key]uint64{}, map[key]uint64{}
	var totalEv, totalLost uint64
	for rd.Next() {
		b := rd.Batch()
		for i := 0; i < b.Len; i++ {
			k := key{rd.Meta.Probes[b.Probe[i]].Name, b.CPU[i]}
			if c, ok := b.Lost(i); ok {
				lost[k] += c
				totalLost += c
			} else {
				recorded[k]++
				totalEv++
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if rd.Recovered {
		t.Error("the capture written through the FIFO has no footer")
	}
	rd.Close()
	for _, p := range []string{"tick", "ret"} {
		for cpu := uint16(0); cpu < 2; cpu++ {
			k := key{p, cpu}
			t.Logf("%s on cpu%d: %d recorded + %d lost = %d (generated %d)", p, cpu, recorded[k], lost[k], recorded[k]+lost[k], n)
			if recorded[k]+lost[k] != n {
				t.Errorf("%s on cpu%d: %d recorded + %d lost != %d generated", p, cpu, recorded[k], lost[k], n)
			}
		}
	}
	if totalLost == 0 {
		t.Error("nothing was lost: the overload did not happen")
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("%s lost;", count(totalLost))) {
		t.Errorf("the summary does not report %d lost", totalLost)
	}
	t.Logf("%d events generated in %v, %d recorded, %d lost (%.1f%%); recorder peak RSS %d KiB (bound %d KiB)",
		4*n, generating.Round(time.Millisecond), totalEv, totalLost, 100*float64(totalLost)/float64(4*n), peak, rssBound)
	if peak == 0 || peak > rssBound {
		t.Errorf("recorder peak RSS %d KiB, bound %d KiB", peak, rssBound)
	}

	h := runBin(t, exec.Command(bin, "hist", capture, "tick", "arg0"))
	want := fmt.Sprintf("WARNING: %s: %d events were lost (ret %d, tick %d; cpu0 %d, cpu1 %d)", capture, totalLost,
		lost[key{"ret", 0}]+lost[key{"ret", 1}], lost[key{"tick", 0}]+lost[key{"tick", 1}],
		lost[key{"tick", 0}]+lost[key{"ret", 0}], lost[key{"tick", 1}]+lost[key{"ret", 1}])
	if h.code != 0 || !strings.Contains(h.stderr, want) {
		t.Errorf("hist: exit %d, stderr %q, want %q", h.code, h.stderr, want)
	}
}

// count formats n with thousands separators, as the record summary does.
func count(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
