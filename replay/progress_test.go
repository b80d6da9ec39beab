package replay

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// progressLog is a Progress that keeps what it was told.
type progressLog struct {
	reads  [][2]int // batches read, of how many
	passes int      // Done calls
}

func (l *progressLog) Read(batches, of int) { l.reads = append(l.reads, [2]int{batches, of}) }
func (l *progressLog) Done()                { l.passes++ }

// TestProgress: a pass tells the capture's Progress of every batch it
// reads, counting from 1 to the capture's batches, and that it is over,
// also where it stops before the end.
func TestProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cap.arrow")
	if err := formattest.WriteFile(path, 10000, nil, format.WriterOptions{BatchRows: 1000}, 0); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := c.r.NumBatches()
	if n < 10 {
		t.Fatalf("%d batches, want 10 or more", n)
	}
	for _, tc := range []struct {
		name  string
		pass  func() error
		reads int // 0: every batch
	}{
		{"latency", func() error {
			_, _, err := Latency(c, LatencyOptions{Entry: "rx", Return: "rx_ret"}, io.Discard)
			return err
		}, 0},
		{"hist --comm", func() error {
			_, err := Hist(c, HistOptions{Probe: "rx", Field: "arg2", Rows: RowFilter{Comms: []string{"CPU 0/KVM"}}}, io.Discard)
			return err
		}, 0},
		{"events -n 1500", func() error {
			_, err := Events(c, EventsOptions{Limit: 1500}, io.Discard)
			return err
		}, 3}, // the first batch is empty (format.Create)
	} {
		log := &progressLog{}
		c.Progress = log
		if err := tc.pass(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := tc.reads
		if want == 0 {
			want = n
		}
		if log.passes != 1 || len(log.reads) != want {
			t.Errorf("%s: %d passes over, %d batches read; want 1, %d", tc.name, log.passes, len(log.reads), want)
		}
		for i, r := range log.reads {
			if r != [2]int{i + 1, n} {
				t.Errorf("%s: read %d told %d of %d batches, want %d of %d", tc.name, i, r[0], r[1], i+1, n)
				break
			}
		}
	}
}
