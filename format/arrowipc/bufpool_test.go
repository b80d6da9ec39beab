package arrowipc

import "testing"

// TestBufPoolSizes checks that the pool hands out the smallest buffer
// that holds a request, and none many times its size.
func TestBufPoolSizes(t *testing.T) {
	var p BufPool
	p.Put(make([]byte, 1<<19))
	p.Put(make([]byte, 1<<16))
	if b := p.get(4096); b != nil {
		t.Fatalf("a 4 KiB request took a buffer of %d bytes", cap(b))
	}
	if b := p.get(60000); cap(b) != 1<<16 {
		t.Fatalf("a 60000-byte request took %d bytes, want the 64 KiB buffer", cap(b))
	}
	if b := p.get(100000); b != nil {
		t.Fatalf("a 100000-byte request took %d bytes, want none (the 512 KiB buffer is over 4 times its size)", cap(b))
	}
	if b := p.get(1 << 18); cap(b) != 1<<19 {
		t.Fatalf("a 256 KiB request took %d bytes, want the 512 KiB buffer", cap(b))
	}
	if b := p.get(1); b != nil {
		t.Fatalf("an empty pool gave %d bytes", cap(b))
	}
	var nilPool *BufPool
	if b := nilPool.get(10); b != nil {
		t.Fatal("a nil pool gave a buffer")
	}
}
