// Package textsafe escapes strings that come from a capture or a traced
// process before they reach a terminal or a text file. A traced process
// names its threads itself (prctl(PR_SET_NAME)) and a capture is a file
// from anywhere: a comm of "\n..." would forge output lines, one of
// "\x1b]0;...\a" would retitle the terminal, and one holding U+202E
// (RIGHT-TO-LEFT OVERRIDE) would show the text after it reversed. Control
// characters and bytes that are not UTF-8 are shown as ls -b shows them
// (\n, \t, \x1b), invisible format characters as Go writes them (\u202e),
// and a backslash as \\, so that an escaped string reads back
// unambiguously.
package textsafe

import (
	"encoding/binary"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Invisible reports whether r is a format character: one that a terminal
// or a browser does not show as a glyph but that changes how the text
// around it shows or where it breaks. These are Unicode's category Cf
// (the bidirectional embeddings, overrides and isolates U+202A..U+202E and
// U+2066..U+2069, the zero-width space, joiners and marks U+200B..U+200F,
// the byte order mark U+FEFF, the soft hyphen U+00AD, the tags
// U+E0001..U+E007F, ...) and the line and paragraph separators U+2028 and
// U+2029, which start a new line in some viewers.
func Invisible(r rune) bool {
	if r < 0x10000 {
		return invisibleBMP[r>>6]&(1<<(r&63)) != 0
	}
	return unicode.Is(unicode.Cf, r)
}

// invisibleBMP has bit r set for each invisible r below U+10000: a lookup
// instead of unicode.Is's search, for text in scripts beyond Latin.
var invisibleBMP = func() (t [0x10000 / 64]uint64) {
	set := func(r rune) { t[r>>6] |= 1 << (r & 63) }
	for _, rg := range unicode.Cf.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			set(r)
		}
	}
	set(0x2028)
	set(0x2029)
	return t
}()

// Escape returns s with control characters (C0, DEL and C1), invisible
// format characters (Invisible), invalid UTF-8 bytes and backslashes
// escaped; a string without any is returned as it is. C1 and format
// characters are written \u0085, \u202e, and beyond U+FFFF \U000e0001.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			hex(&b, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			hex(&b, byte(r))
		case r >= 0x80 && r < 0xa0 || r >= 0xa0 && Invisible(r):
			writeU(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Strings escapes each of ss, in a new slice.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Escape(s)
	}
	return out
}

const digits = "0123456789abcdef"

// writeU writes r as \u and 4 hex digits, or beyond U+FFFF as \U and 8.
func writeU(b *strings.Builder, r rune) {
	n := 4
	if r > 0xffff {
		b.WriteString(`\U`)
		n = 8
	} else {
		b.WriteString(`\u`)
	}
	for k := n - 1; k >= 0; k-- {
		b.WriteByte(digits[r>>(4*k)&15])
	}
}

// Visible returns s with its invisible format characters (Invisible)
// escaped as Escape escapes them, and everything else as it is: for text
// whose format has rules of its own for the rest (a CSV cell quotes
// newlines). A string without any is returned as it is.
func Visible(s string) string {
	i := firstInvisible(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if Invisible(r) {
			writeU(&b, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstInvisible returns the index of the first invisible format character
// of s, -1 for none. ASCII holds none.
func firstInvisible(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < utf8.RuneSelf {
			continue
		}
		for k, r := range s[i:] {
			if r >= 0xa0 && Invisible(r) {
				return i + k
			}
		}
		return -1
	}
	return -1
}

// AppendJSON appends r as a JSON string escape: \u202e, or the UTF-16
// surrogate pair of a rune beyond U+FFFF (\udb40\udc01 for U+E0001).
func AppendJSON(b []byte, r rune) []byte {
	if r > 0xffff {
		r1, r2 := utf16.EncodeRune(r)
		return AppendJSON(AppendJSON(b, r1), r2)
	}
	return append(b, '\\', 'u', digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15])
}

// AppendJSONString appends s as a JSON string: bytes that are not UTF-8
// as U+FFFD, and invisible format characters (U+202E RIGHT-TO-LEFT
// OVERRIDE, zero-width spaces, the line and paragraph separators, ...:
// Invisible) as escapes, so that the string is the same but the line
// holds none of them raw.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', digits[c>>4], digits[c&15])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case Invisible(r):
			b = AppendJSON(b, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

func hex(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&15])
}

// clean reports whether s needs no escaping: printable ASCII throughout,
// or valid UTF-8 without control characters, format characters or
// backslashes. ASCII is checked a byte at a time, before any rune is
// decoded.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		// Below U+00A0: C1 controls.
		if r == utf8.RuneError || r < 0xa0 || Invisible(r) {
			return false
		}
		i += n
	}
	return true
}

// ShellQuote joins args into one line that a POSIX shell (bash, for an
// argument with control characters) reads back as args: plain words as
// they are, others in single quotes, and those with control characters or
// bytes that are not UTF-8 in bash's $'...' with escapes, so that the line
// is safe to print and to paste.
func ShellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "":
			b.WriteString(a)
		case clean(strings.ReplaceAll(a, `\`, "")):
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		default:
			b.WriteString("$'" + strings.ReplaceAll(Escape(a), "'", `\'`) + "'")
		}
	}
	return b.String()
}

// XMLPlain returns s as Escape does, with the noncharacters U+FFFE and
// U+FFFF written as \ufffe and \uffff too: XML forbids them as it forbids
// control characters and bytes that are not UTF-8. The result, once its
// markup is escaped (XMLText), is text that any XML document may hold,
// shown as the terminal shows it; a string without any of these is
// returned as it is.
func XMLPlain(s string) string {
	s = Escape(s)
	if strings.ContainsAny(s, "\ufffe\uffff") {
		s = strings.NewReplacer("\ufffe", `\ufffe`, "\uffff", `\uffff`).Replace(s)
	}
	return s
}

// XMLText returns s as the text of an SVG or HTML element or a quoted
// attribute value: XMLPlain's visible escapes, then the markup characters
// escaped as html.EscapeString escapes them. A newline in s is written as
// \n, so text from a capture cannot start a line of a tooltip; text with
// lines escapes each line and joins them.
func XMLText(s string) string { return html.EscapeString(XMLPlain(s)) }

// Markup returns an HTML or SVG document with every control character but
// tab, newline and carriage return written as \xNN: XML 1.0 forbids them
// (an SVG with one does not open) and a browser does not show them. It
// writes every invisible format character (Invisible) as \u202e, visible
// text, since a character reference (&#x202e;) would still reverse the
// text. b is changed in place when it has none of either.
func Markup(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		c := b[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(b[i:])
			if r >= 0xa0 && Invisible(r) {
				if out == nil {
					out = append(make([]byte, 0, len(b)+16), b[:i]...)
				}
				out = appendU(out, r)
			} else if out != nil {
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		}
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = append(out, '\\', 'x', digits[c>>4], digits[c&15])
		} else if out != nil {
			out = append(out, c)
		}
		i++
	}
	if out == nil {
		return b
	}
	return out
}

// appendU appends r as writeU writes it.
func appendU(b []byte, r rune) []byte {
	var sb strings.Builder
	writeU(&sb, r)
	return append(b, sb.String()...)
}

// A Writer copies text to another writer with every invisible format
// character (Invisible) written as a JSON string escape (AppendJSON): in
// plain text it reads as Escape writes a character of the Basic
// Multilingual Plane, and in a JSON document, where such characters can
// only be inside strings, it is the same string, without the character's
// bytes. A character split across two writes is held back until the
// second; Flush writes out an incomplete one left at the end.
type Writer struct {
	w       io.Writer
	pending []byte // the start of a character the last write cut
	buf     []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, escaped, and returns len(p) when all of it was taken.
func (w *Writer) Write(p []byte) (int, error) {
	in := p
	if len(w.pending) > 0 {
		in = append(w.pending, p...)
		w.pending = nil
	}
	// Hold back a cut character at the end.
	end := len(in)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(in); k++ {
		c := in[len(in)-k]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(in[len(in)-k:]) {
				end = len(in) - k
			}
			break
		}
	}
	out := w.escape(in[:end])
	w.pending = append(w.pending[:0], in[end:]...)
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// escape returns b with its invisible characters escaped: b itself when
// it has none, else the Writer's buffer.
func (w *Writer) escape(b []byte) []byte {
	i := 0
	// 32 ASCII bytes at a time, then 8: most output is ASCII, and a byte
	// at a time took a quarter of the CPU of bpftape events (8 at a time,
	// a tenth).
	for ; i+32 <= len(b); i += 32 {
		q := b[i : i+32]
		if (binary.LittleEndian.Uint64(q)|binary.LittleEndian.Uint64(q[8:])|
			binary.LittleEndian.Uint64(q[16:])|binary.LittleEndian.Uint64(q[24:]))&0x8080808080808080 != 0 {
			break
		}
	}
	for i < len(b) {
		if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 == 0 {
			i += 8
			continue
		}
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0xa0 && Invisible(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := append(w.buf[:0], b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0xa0 && Invisible(r) {
			out = AppendJSON(out, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	w.buf = out
	return out
}

// Flush writes out the start of a character a write cut and no later
// write completed, as it is.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	_, err := w.w.Write(w.pending)
	w.pending = w.pending[:0]
	return err
}
