// Package textsafe escapes strings that come from a capture or a traced
// process before they reach a terminal or a text file. A traced process
// names its threads itself (prctl(PR_SET_NAME)) and a capture is a file
// from anywhere: a comm of "\n..." would forge output lines, and one of
// "\x1b]0;...\a" would retitle the terminal. Control characters and bytes
// that are not UTF-8 are shown as ls -b shows them (\n, \t, \x1b), and a
// backslash as \\, so that an escaped string reads back unambiguously.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Escape returns s with control characters (C0, DEL and C1), invalid UTF-8
// bytes and backslashes escaped; a string without any is returned as it is.
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
		case r >= 0x80 && r < 0xa0:
			b.WriteString(`\u00`)
			b.WriteByte(digits[r>>4])
			b.WriteByte(digits[r&15])
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

func hex(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&15])
}

// clean reports whether s needs no escaping: printable ASCII throughout,
// or valid UTF-8 without control characters or backslashes.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
		if c >= 0x80 {
			for _, r := range s[i:] {
				if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\\' {
					return false
				}
			}
			return utf8.ValidString(s[i:])
		}
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

// Markup returns an HTML or SVG document with every control character but
// tab, newline and carriage return written as \xNN: XML 1.0 forbids them
// (an SVG with one does not open) and a browser does not show them. b is
// changed in place when it has none.
func Markup(b []byte) []byte {
	var out []byte
	for i, c := range b {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = append(out, '\\', 'x', digits[c>>4], digits[c&15])
		} else if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return b
	}
	return out
}
