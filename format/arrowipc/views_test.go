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
		err := (&Views{views: views, data: data}).check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("good views: %v", err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("view %x: error %v, want %q", c.bad, err, c.want)
		}
	}
}
