package replay

import (
	"strings"
	"testing"
)

// TestInfoReaders: info sends Arrow JS, which has no codecs, through an
// uncompressed export, except for a capture that is uncompressed already.
func TestInfoReaders(t *testing.T) {
	for _, c := range []struct {
		compression string
		jsAsIs      bool
	}{{"zstd", false}, {"lz4", false}, {"none", true}} {
		got := readers(c.compression)
		asIs, _, _ := strings.Cut(got, " as is")
		if strings.Contains(asIs, "JS") != c.jsAsIs || !c.jsAsIs && !strings.Contains(got, "--compress none") {
			t.Errorf("%s: %q", c.compression, got)
		}
	}
}
