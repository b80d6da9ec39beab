package arrowipc

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestViewsCheck: check passes views inline or inside their data buffers
// and names the first row of one that is not, wherever it lies among
// short ones.
func TestViewsCheck(t *testing.T) {
	data := [][]byte{[]byte("a string of more than twelve bytes"), []byte("another long string here")}
	view := func(n, buf, off uint32) []byte {
		h := make([]byte, 16)
		binary.LittleEndian.PutUint32(h, n)
		binary.LittleEndian.PutUint32(h[8:], buf)
		binary.LittleEndian.PutUint32(h[12:], off)
		return h
	}
	good := [][]byte{view(0, 0, 0), view(12, 0, 0), view(13, 0, 0), view(34, 0, 0), view(24, 1, 0), view(13, 0, 21)}
	for _, c := range []struct {
		bad  []byte
		want string // "" for none
	}{
		{nil, ""},
		{view(1<<31, 0, 0), "row 6: string view of negative length"},
		{view(35, 0, 0), "row 6: string view outside its buffers"},
		{view(13, 2, 0), "row 6: string view outside its buffers"},
		{view(13, 1<<31, 0), "row 6: string view outside its buffers"},
		{view(13, 0, 22), "row 6: string view outside its buffers"},
		{view(13, 0, 1<<31), "row 6: string view outside its buffers"},
	} {
		var views []byte
		for _, v := range good {
			views = append(views, v...)
		}
		if c.bad != nil {
			views = append(views, c.bad...)
			views = append(views, view(3, 0, 0)...) // a short view after it
		}
		expect := func(what string, v *Views, want string) {
			t.Helper()
			err := v.check()
			switch {
			case want == "" && err != nil:
				t.Errorf("good views%s: %v", what, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("view %x%s: error %v, want %q", c.bad, what, err, want)
			}
		}
		expect("", &Views{views: views, data: data}, c.want)
		// With buffer 0 alone (check's loop for one data buffer), the
		// view into buffer 1 left out.
		one := append(append([]byte(nil), views[:64]...), views[80:]...)
		expect(" in one buffer", &Views{views: one, data: data[:1]}, strings.ReplaceAll(c.want, "row 6", "row 5"))
	}
	if err := (&Views{views: view(24, 1, 0), data: data[:1]}).check(); err == nil {
		t.Error("a view into buffer 1 of 1 passed")
	}
}

// BenchmarkViewsCheck checks a batch's views (32Ki) of command names in
// one data buffer: a short name, a long one, or the two in random order
// (a fourth long), as threads' events interleave.
func BenchmarkViewsCheck(b *testing.B) {
	long := []byte("qemu-system-x86")
	for _, tc := range []struct {
		name string
		long func(x uint32) bool
	}{{"short", func(uint32) bool { return false }}, {"long", func(uint32) bool { return true }},
		{"mixed", func(x uint32) bool { return x%4 == 0 }}} {
		views := make([]byte, 16*(32<<10))
		x := uint32(1)
		for i := 0; i < len(views); i += 16 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			if tc.long(x) {
				binary.LittleEndian.PutUint32(views[i:], uint32(len(long)))
				copy(views[i+4:i+8], long)
			} else {
				binary.LittleEndian.PutUint32(views[i:], 9)
				copy(views[i+4:], "CPU 0/KVM")
			}
		}
		v := &Views{views: views, data: [][]byte{long}}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(views)))
			for range b.N {
				if err := v.check(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
