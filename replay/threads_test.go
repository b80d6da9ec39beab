package replay

import "testing"

// TestPerThreadReuse wants reuse to forget every thread, in the map and
// in the slots, and to hand their emptied stacks to the threads that come
// after, with the memory they had.
func TestPerThreadReuse(t *testing.T) {
	var st openCalls
	for k := range uint64(3) {
		s := st.of(k)
		*s = append(*s, 10, 20, 30)
	}
	st.reuse(func(s *[]int64) { *s = (*s)[:0] })
	if len(st.m) != 0 {
		t.Fatalf("after reuse the map holds %d threads", len(st.m))
	}
	for k := range uint64(4) {
		s := st.of(k + 8) // the slots of 0..2 again, other keys
		if len(*s) != 0 {
			t.Fatalf("thread %d after reuse: stack %v, want empty", k+8, *s)
		}
		if k < 3 && cap(*s) < 3 {
			t.Errorf("thread %d after reuse: capacity %d, want a reused stack's (3 or more)", k+8, cap(*s))
		}
		*s = append(*s, int64(k))
	}
	if s := st.of(0); len(*s) != 0 {
		t.Errorf("thread 0, forgotten, has stack %v", *s)
	}
	for k := range uint64(4) {
		if s := st.of(k + 8); len(*s) != 1 || (*s)[0] != int64(k) {
			t.Errorf("thread %d: stack %v, want [%d]", k+8, *s, k)
		}
	}
}
