package textsafe

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"virtnet":              "virtnet",
		"héllo wörld":          "héllo wörld",
		"\x1b]0;pwned\a":       `\x1b]0;pwned\x07`,
		"a\nforged line":       `a\nforged line`,
		"tab\there\r":          `tab\there\r`,
		`back\slash`:           `back\\slash`,
		"bad\xffutf8\xc3":      `bad\xffutf8\xc3`,
		"del\x7f c1\u0085":     `del\x7f c1\u0085`,
		"":                     "",
		"=cmd|' /C calc'!A0":   "=cmd|' /C calc'!A0",
		"\x00nul":              `\x00nul`,
		"abc\u202edcba":        `abc\u202edcba`,
		"\u2066x\u2069":        `\u2066x\u2069`,
		"zero\u200bwidth":      `zero\u200bwidth`,
		"\ufeffbom":            `\ufeffbom`,
		"soft\u00adhyphen":     `soft\u00adhyphen`,
		"line\u2028para\u2029": `line\u2028para\u2029`,
		"tag\U000e0041":        `tag\U000e0041`,
		"nbsp\u00a0ok é":       "nbsp\u00a0ok é",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("\x1b[31mred\n")
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		for i := 0; i < len(e); i++ {
			if c := e[i]; c < 0x20 || c == 0x7f {
				t.Fatalf("Escape(%q) = %q holds control byte %#x", s, e, c)
			}
		}
		if !utf8.ValidString(e) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", s, e)
		}
		for _, r := range e {
			if Invisible(r) {
				t.Fatalf("Escape(%q) = %q holds format character %U", s, e, r)
			}
		}
	})
}

// TestShellQuote reads quoted command lines back with bash.
func TestShellQuote(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to read the quoted line back")
	}
	args := []string{"bpftape", "record", "-c", "sh -c './app; ./app'", "u:./virtnet:virtio_net_receive_rcu(arg2)",
		"it's", "", `back\slash`, "\x1b]0;pwned\a", "new\nline", "bad\xffbyte", "$HOME", "*"}
	line := ShellQuote(args)
	if strings.ContainsAny(line, "\x1b\n\a") {
		t.Fatalf("quoted line %q holds control characters", line)
	}
	out, err := exec.Command("bash", "-c", "printf '%s\\0' "+line).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, args) {
		t.Errorf("bash read %q back as\n%q\nwant %q", line, got, args)
	}
}

func TestAppendJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"a\"\\\n\x01\u2028é": `"a\"\\\n\u0001\u2028é"`,
		"bad\xffbyte":        `"bad\ufffdbyte"`,
		"tag\U000E0001":      `"tag\udb40\udc01"`,
		"":                   `""`,
	} {
		if got := string(AppendJSONString(nil, in)); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestWriterOffsets puts an invisible character after every length of
// ASCII from 0 to 20, so that it falls at every place of the Writer's
// eight-byte ASCII stride, and wants it escaped each time.
func TestWriterOffsets(t *testing.T) {
	for n := 0; n <= 20; n++ {
		var b strings.Builder
		w := NewWriter(&b)
		in := strings.Repeat("a", n) + "\u202e" + strings.Repeat("b", n)
		if _, err := w.Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if want := strings.Repeat("a", n) + `\u202e` + strings.Repeat("b", n); b.String() != want {
			t.Errorf("%d bytes before: %q, want %q", n, b.String(), want)
		}
	}
}
