package shellwords

import (
	"fmt"
	"testing"
)

func TestSplit(t *testing.T) {
	for in, want := range map[string]string{
		`./virtnet 1000`:               `["./virtnet" "1000"]`,
		`  sh -c 'exit 7'  `:           `["sh" "-c" "exit 7"]`,
		`echo "a \"b\" \$c" d\ e ''`:   `["echo" "a \"b\" $c" "d e" ""]`,
		`a'b'"c"`:                      `["abc"]`,
		"x\ty\nz":                      `["x" "y" "z"]`,
		`printf "%s\n" "\n"`:           `["printf" "%s\\n" "\\n"]`,
		`dd if=/dev/zero of=/dev/null`: `["dd" "if=/dev/zero" "of=/dev/null"]`,
	} {
		got, err := Split(in)
		if err != nil || fmt.Sprintf("%q", got) != want {
			t.Errorf("Split(%q) = %q, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "   ", `'a`, `"a`, `a\`} {
		if got, err := Split(in); err == nil {
			t.Errorf("Split(%q) = %q, want an error", in, got)
		}
	}
}
