package textsafe

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestInvisible checks Invisible against Unicode's category Cf and the two
// separators, over every rune.
func TestInvisible(t *testing.T) {
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029
		if Invisible(r) != want {
			t.Errorf("Invisible(%U) = %v", r, !want)
		}
		if want {
			n++
		}
	}
	for _, r := range []rune{0x202a, 0x202e, 0x2066, 0x2069, 0x200b, 0x200f, 0xfeff, 0xad, 0x61c, 0xe0001} {
		if !Invisible(r) {
			t.Errorf("Invisible(%U) = false", r)
		}
	}
	t.Logf("%d invisible characters", n)
}

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                  "plain",
		"héllo":                  "héllo",
		"a\nb\\c\x1b":            "a\nb\\c\x1b", // only format characters
		"\u202eevil":             `\u202eevil`,
		"é\u2066x\u200b\ufeff":   `é\u2066x\u200b\ufeff`,
		"\U000e0001\U000e007f":   `\U000e0001\U000e007f`,
		"bad\xff\u202e":          "bad\xff\\u202e",
		"\u00ad":                 `\u00ad`,
		"line\u2028para\u2029ok": `line\u2028para\u2029ok`,
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkup(t *testing.T) {
	in := "<text>a\x1b[31m \u202eevil\u2069 é\tb\U000e0041</text>\xff"
	want := "<text>a\\x1b[31m \\u202eevil\\u2069 é\tb\\U000e0041</text>\xff"
	if got := string(Markup([]byte(in))); got != want {
		t.Errorf("Markup = %q, want %q", got, want)
	}
	clean := []byte("<p>héllo · ✓</p>\n")
	if got := Markup(clean); &got[0] != &clean[0] {
		t.Errorf("Markup copied a clean document")
	}
}

// TestXMLText checks that any string becomes character data that an XML
// parser accepts and reads back as XMLPlain's visible text.
func TestXMLText(t *testing.T) {
	for in, want := range map[string]string{
		"plain · ✓":          "plain · ✓",
		`<a href="x">&'</a>`: "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;",
		"a\nb\\c":            `a\nb\\c`,
		"line\nforged\tx\r":  `line\nforged\tx\r`,
		"\x1b]0;t\a\x7f":     `\x1b]0;t\x07\x7f`,
		"bad\xff\xc3":        `bad\xff\xc3`,
		"\u0085\u202eevil":   `\u0085\u202eevil`,
		"\ufffe\uffff\ufffd": "\\ufffe\\uffff\ufffd",
		"\U000e0041":         `\U000e0041`,
	} {
		got := XMLText(in)
		if got != want {
			t.Errorf("XMLText(%q) = %q, want %q", in, got, want)
		}
		var v struct {
			Text string `xml:",chardata"`
		}
		if err := xml.Unmarshal([]byte("<t>"+got+"</t>"), &v); err != nil {
			t.Errorf("XMLText(%q) = %q: %v", in, got, err)
		} else if v.Text != XMLPlain(in) {
			t.Errorf("XMLText(%q) reads back as %q, want %q", in, v.Text, XMLPlain(in))
		}
	}
}

// TestWriter writes JSON through a Writer in pieces of every size: the
// result is valid JSON of the same value, without a format character.
func TestWriter(t *testing.T) {
	val := map[string]any{"comm": "a\u202eb\u2066c\u200bd\ufeffe", "tag": "x\U000e0041y", "sep": "l\u2028p\u2029", "ok": "héllo wörld ✓"}
	doc, err := json.Marshal(val)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.ContainsRune(doc, 0x202e) {
		t.Fatal("encoding/json now escapes U+202E: the test needs another character")
	}
	for size := 1; size <= len(doc); size++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := 0; i < len(doc); i += size {
			if n, err := w.Write(doc[i:min(i+size, len(doc))]); err != nil || n != min(size, len(doc)-i) {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		for _, r := range string(b) {
			if Invisible(r) {
				t.Fatalf("pieces of %d: %U in %s", size, r, b)
			}
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, val) {
			t.Fatalf("pieces of %d: %s reads back as %q, %v", size, b, back, err)
		}
	}
	// Text reads as Escape writes it; a cut character is flushed as it is.
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("comm \u202eevil\n\xe2\x80"))
	w.Flush()
	if got, want := out.String(), "comm \\u202eevil\n\xe2\x80"; got != want {
		t.Errorf("text: %q, want %q", got, want)
	}
}

// TestShellQuoteInvisible reads back with bash a quoted argument holding
// format characters, which the line shows escaped.
func TestShellQuoteInvisible(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to read the quoted line back")
	}
	args := []string{"a\u202eb", "\u2066x\u2069", "z\u200bw", "\ufeffbom"}
	line := ShellQuote(args)
	for _, r := range line {
		if Invisible(r) {
			t.Fatalf("quoted line %q holds %U", line, r)
		}
	}
	out, err := exec.Command("bash", "-c", "printf '%s\\0' "+line).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, args) {
		t.Errorf("bash read %q back as %q, want %q", line, got, args)
	}
}

var benchStrings = map[string]string{
	"ascii":  "qemu-system-x86_64 vhost-4242 virtio_net_receive_rcu",
	"utf8":   "héllo wörld · ✓ Ünïcödé 日本語のテキスト",
	"escape": "ab\u202ecd\x1b[31m",
}

func BenchmarkEscape(b *testing.B) {
	for _, name := range []string{"ascii", "utf8", "escape"} {
		s := benchStrings[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				_ = Escape(s)
			}
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	line := []byte(strings.Repeat(`{"comm":"qemu-system-x86","pid":4242,"name":"héllo"}`+"\n", 64))
	w := NewWriter(discard{})
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		w.Write(line)
	}
	if !utf8.Valid(line) {
		b.Fatal("bad line")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
