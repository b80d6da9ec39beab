package format

import (
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
	"unsafe"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// TestReadAheadPools checks that, reading ahead with Recycle, a batch's
// buffers go back to the pool of the decoder that filled them, and so
// are filled again on that decoder's goroutine: a buffer's memory is
// never seen in batches of two decoders, and memory is reused.
func TestReadAheadPools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	want := writeRandom(t, path, Zstd, 40000, 1000)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Recycle, r.ReadAhead = true, 3
	// Each decoder takes the next batch as soon as a token lets it, so
	// one that always has a core could take them all: batches 1 to 3 wait
	// for each other where they were decoded, which takes one from each
	// decoder (batch 0 may be read before the decoders start).
	var first sync.WaitGroup
	first.Add(3)
	r.Work = func(b *Batch) any {
		if b.Index >= 1 && b.Index <= 3 {
			first.Done()
			first.Wait()
		}
		return nil
	}
	// A buffer's address: its pool. Without a collection during the test,
	// no buffer a full pool drops is freed and its address taken again by
	// another pool's new buffer.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	owner := map[uintptr]*arrowipc.BufPool{}
	pools := map[*arrowipc.BufPool]bool{}
	reused, rows := 0, 0
	for r.Next() {
		b := r.Batch()
		if b.Len == 0 {
			continue
		}
		if b.pool == &r.pool {
			t.Fatal("a batch read ahead has the reader's own pool")
		}
		pools[b.pool] = true
		for _, buf := range b.recycle {
			if cap(buf) == 0 {
				continue
			}
			at := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
			if p, ok := owner[at]; ok {
				reused++
				if p != b.pool {
					t.Fatalf("batch %d: a buffer of it was filled before by another decoder", b.Index)
				}
			}
			owner[at] = b.pool
		}
		for i := range b.Len {
			if b.Time[i] != want[rows+i].ev.Time {
				t.Fatalf("batch %d row %d: time %d, want %d", b.Index, i, b.Time[i], want[rows+i].ev.Time)
			}
		}
		rows += b.Len
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != len(want) {
		t.Fatalf("%d rows, want %d", rows, len(want))
	}
	if len(pools) != 3 {
		t.Errorf("batches from %d pools, want one for each of 3 decoders", len(pools))
	}
	// 40 batches of a dozen buffers, of which the first few batches of
	// each decoder allocate theirs.
	if reused < 200 {
		t.Errorf("%d buffers reused", reused)
	}
}
