package record

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestRecorderNotRecorded: a system-wide tracepoint fires in every process,
// the recorder's own included (its writes of the capture, here also a
// goroutine of this process writing every 5 ms), and the programs never
// record the recorder's process (bpf's self_tgid), while another process's
// writes are recorded.
func TestRecorderNotRecorded(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	noise := exec.Command("sh", "-c", "while :; do echo noise; sleep 0.01; done >/dev/null")
	if err := noise.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { noise.Process.Kill(); noise.Wait() }()

	f, err := os.Create(filepath.Join(t.TempDir(), "own"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ownWrites := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := f.Write([]byte("own\n")); err == nil {
				ownWrites++
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	s, _ := mustRecord(t, Options{Duration: 1500 * time.Millisecond, Probes: []string{"t:syscalls:sys_exit_write"}})
	stop()
	<-done
	c := readCapture(t, s.Output)
	self, others := 0, 0
	for _, r := range c.rows["sys_exit_write"] {
		if r.pid == uint32(os.Getpid()) {
			self++
		} else {
			others++
		}
	}
	if self != 0 || others == 0 || ownWrites == 0 {
		t.Errorf("%d events of the recorder's own process (it wrote %d times), %d of others; want 0 and some", self, ownWrites, others)
	}
}
