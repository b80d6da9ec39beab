//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/shellwords"
	"github.com/bpftape/bpftape/internal/testutil"
)

// The README is read top-down by a newcomer: it stays short, says how to
// set up and where the quick start is early, and leaves the rest to docs/.
const (
	readmeMaxLines   = 250
	readmeEarlyLines = 60
	quickStartTitle  = "## Quick start on your own program"
)

// readmeJargon is text that means something only to bpftape's developers:
// names of internal test data sets, issue numbers, Go identifiers a user
// never types.
var readmeJargon = []string{
	"seed 0",
	"issue 1",
	"issue 2",
	"Options.Uses",
	"bpf.Options",
	"seed tables",
	"seed analyses",
	"TestLiveRecord",
	"TestJSONStable",
	"elfsym.Open",
	"OpenRegular",
	"MaxOpenParts",
	"PartsMemory",
	"AddForgedStackPart",
}

// repoRoot is the repository, two folders above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// userDocs returns README.md and docs/*.md, relative to the repository, with
// their text.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	root := repoRoot(t)
	names := []string{"README.md"}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("docs/ holds no .md page")
	}
	for _, p := range pages {
		names = append(names, filepath.Join("docs", filepath.Base(p)))
	}
	docs := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, n))
		if err != nil {
			t.Fatal(err)
		}
		docs[n] = string(b)
	}
	return docs
}

func TestReadmeShort(t *testing.T) {
	docs := userDocs(t)
	readme := docs["README.md"]
	lines := strings.Split(strings.TrimSuffix(readme, "\n"), "\n")
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move details to docs/", len(lines), readmeMaxLines)
	}
	if !strings.HasPrefix(readme, "# bpftape\n\nbpftape is ") {
		t.Errorf("README.md does not open with what bpftape is")
	}
	n := min(readmeEarlyLines, len(lines))
	early := strings.Join(lines[:n], "\n")
	for _, want := range []string{"make demo", "make test", "make build", "make install", quickStartTitle} {
		if !strings.Contains(early, want) {
			t.Errorf("README.md's first %d lines lack %q", readmeEarlyLines, want)
		}
	}
}

func TestReadmeNoJargon(t *testing.T) {
	for name, text := range userDocs(t) {
		lower := strings.ToLower(text)
		for _, j := range readmeJargon {
			if i := strings.Index(lower, strings.ToLower(j)); i >= 0 {
				line := strings.Count(text[:i], "\n") + 1
				t.Errorf("%s:%d: internal jargon %q", name, line, j)
			}
		}
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// but hyphens and underscores dropped, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	a := map[string]bool{}
	inFence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
			continue
		}
		if !inFence && strings.HasPrefix(l, "#") {
			a[anchor(strings.TrimSpace(strings.TrimLeft(l, "#")))] = true
		}
	}
	return a
}

// TestReadmeLinks checks that every relative link of README.md and docs/
// names an existing file, and a heading of it when it has a fragment.
func TestReadmeLinks(t *testing.T) {
	root := repoRoot(t)
	docs := userDocs(t)
	for name, text := range docs {
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			rel := name
			if file != "" {
				rel = filepath.Join(filepath.Dir(name), file)
			}
			if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
				t.Errorf("%s: link %q: %v", name, target, err)
				continue
			}
			if frag == "" {
				continue
			}
			linked, ok := docs[filepath.Clean(rel)]
			if !ok {
				t.Errorf("%s: link %q: a fragment into a file this test does not read", name, target)
				continue
			}
			if !anchors(linked)[frag] {
				t.Errorf("%s: link %q: %s has no heading #%s", name, target, rel, frag)
			}
		}
	}
}

// exampleCommands returns the bpftape command lines of the ``` blocks of
// text: continuation lines joined, a leading sudo, comments, pipes and
// redirections dropped.
func exampleCommands(text string) []string {
	var cmds []string
	inFence := false
	var cur string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
			cur = ""
			continue
		}
		if !inFence {
			continue
		}
		if cur != "" {
			l = cur + " " + strings.TrimSpace(l)
			cur = ""
		} else {
			l = strings.TrimSpace(l)
			l = strings.TrimPrefix(l, "sudo ")
			if !strings.HasPrefix(l, "bpftape ") && !strings.HasPrefix(l, "bin/bpftape ") {
				continue
			}
		}
		l = shellCut(l)
		if strings.HasSuffix(l, "\\") {
			cur = strings.TrimSuffix(l, "\\")
			continue
		}
		cmds = append(cmds, l)
	}
	return cmds
}

// shellCut cuts l at its first unquoted comment, pipe or redirection.
func shellCut(l string) string {
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || l[i-1] == ' '), c == '|', c == '>':
			return strings.TrimSpace(l[:i])
		}
	}
	return strings.TrimSpace(l)
}

var helpFlag = regexp.MustCompile(`(?m)^  -{1,2}([A-Za-z0-9][A-Za-z0-9-]*)`)

var negNumber = regexp.MustCompile(`^-[0-9]`)

// TestReadmeExamples checks that every verb and flag the examples of
// README.md and docs/ use exists: each verb's --help lists each flag.
func TestReadmeExamples(t *testing.T) {
	helps := map[string]map[string]bool{}
	checked := 0
	for name, text := range userDocs(t) {
		for _, cmd := range exampleCommands(text) {
			words, err := shellwords.Split(cmd)
			if err != nil {
				t.Errorf("%s: %q: %v", name, cmd, err)
				continue
			}
			if len(words) < 2 {
				t.Errorf("%s: %q: no verb", name, cmd)
				continue
			}
			verb := words[1]
			if strings.HasSuffix(verb, ":") {
				continue // a message bpftape prints ("bpftape info: open ..."), not a command
			}
			args := []string{verb}
			if verb == "sql" && len(words) > 2 {
				// bpftape sql VERB: each verb has its own flags.
				args = append(args, words[2])
				verb += " " + words[2]
			}
			flags, ok := helps[verb]
			if !ok {
				out, errOut, code := runCLI(t, append(args, "--help")...)
				if code != exitOK {
					t.Errorf("%s: %q: bpftape %s --help exits %d: %s", name, cmd, verb, code, errOut)
					helps[verb] = nil
					continue
				}
				flags = map[string]bool{"help": true}
				for _, m := range helpFlag.FindAllStringSubmatch(out+errOut, -1) {
					flags[m[1]] = true
				}
				helps[verb] = flags
			}
			if flags == nil {
				continue
			}
			checked++
			for _, w := range words[2:] {
				if !strings.HasPrefix(w, "-") || w == "-" || negNumber.MatchString(w) {
					continue
				}
				f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
				if !flags[f] {
					t.Errorf("%s: %q: bpftape %s has no flag %s", name, cmd, verb, w)
				}
			}
		}
	}
	t.Logf("%d example commands checked, verbs %d", checked, len(helps))
	if checked < 30 {
		t.Errorf("only %d example commands found: is the extraction broken?", checked)
	}
}

// TestReadmeExamplesRun runs, in a folder of its own per page, every
// example of README.md and docs/ whose captures are there when it comes:
// vnet.arrow, before.arrow and after.arrow, host-a.arrow and host-b.arrow
// (writeVnet: the virtio-net tour's probes), killed.arrow (vnet.arrow cut
// short, as a SIGKILLed recorder leaves it), and whatever an earlier
// example wrote (merge's fleet.arrow). Each must exit 0, as a reader
// pasting it would see; record examples need their programs, and the
// quick start runs for real in TestReadmeQuickStart.
func TestReadmeExamplesRun(t *testing.T) {
	ran := 0
	for name, text := range userDocs(t) {
		var cmds [][]string
		for _, cmd := range exampleCommands(text) {
			words, err := shellwords.Split(cmd)
			if err != nil || len(words) < 3 || words[1] == "record" || !slices.ContainsFunc(words, isCapture) {
				continue
			}
			cmds = append(cmds, words[1:])
		}
		if len(cmds) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for file, host := range map[string]string{"vnet.arrow": "vnet-host", "before.arrow": "vnet-host",
				"after.arrow": "vnet-host", "host-a.arrow": "host-a", "host-b.arrow": "host-b"} {
				writeVnet(t, filepath.Join(dir, file), host, 20000)
			}
			b, err := os.ReadFile(filepath.Join(dir, "vnet.arrow"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "killed.arrow"), b[:len(b)*3/4], 0o600); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			for _, args := range cmds {
				if missing := missingInputs(args); missing != "" {
					t.Logf("%s: bpftape %s: not run, no %s here", name, strings.Join(args, " "), missing)
					continue
				}
				if _, errOut, code := runCLI(t, args...); code != exitOK {
					t.Errorf("%s: bpftape %s: exit %d\n%s", name, strings.Join(args, " "), code, errOut)
				}
				ran++
			}
		})
	}
	t.Logf("%d examples run", ran)
	if ran < 30 {
		t.Errorf("only %d examples ran: is the extraction broken?", ran)
	}
}

func isCapture(w string) bool { return strings.HasSuffix(w, ".arrow") }

// missingInputs returns the first capture args read that is not in the
// current folder: any .arrow word but an -o value and repair's output.
func missingInputs(args []string) string {
	for i, w := range args {
		if !isCapture(w) || i > 0 && (args[i-1] == "-o" || args[i-1] == "--output") ||
			args[0] == "repair" && i == len(args)-1 {
			continue
		}
		if _, err := os.Stat(w); err != nil {
			return w
		}
	}
	return ""
}

// TestReadmeQuickStart runs the README's quick start as it is written, as
// a shell script in a folder holding testdata/quickstart/myprog.c and
// bin/bpftape: it must exit 0, the histogram must count every request
// myprog says it handled, and the report must be written.
func TestReadmeQuickStart(t *testing.T) {
	bin, _ := bpftapeBin(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), quickStartTitle+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", quickStartTitle)
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	script, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(script, "bin/bpftape record") {
		t.Fatalf("the quick start has no code block with a recording:\n%s", rest)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "quickstart", "myprog.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "myprog.c"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "bpftape")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	r := runBin(t, cmd)
	if r.code != 0 {
		t.Fatalf("the quick start exits %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// myprog's truth, then hist's counts: they must add up to it.
	m := regexp.MustCompile(`handled (\d+) requests`).FindStringSubmatch(r.stdout + r.stderr)
	if m == nil {
		t.Fatalf("no truth line from myprog:\n%s\n%s", r.stdout, r.stderr)
	}
	var counted int
	for _, row := range regexp.MustCompile(`(?m)^\s+\d+ -> \d+\s+: (\d+)`).FindAllStringSubmatch(r.stdout, -1) {
		n, _ := strconv.Atoi(row[1])
		counted += n
	}
	if want, _ := strconv.Atoi(m[1]); counted != 2*want {
		// Two histograms: hist's of arg1, latency's of the durations.
		t.Errorf("the histograms count %d, want 2 x %d\n%s", counted, want, r.stdout)
	}
	if st, err := os.Stat(filepath.Join(dir, "my.html")); err != nil || st.Size() == 0 {
		t.Errorf("no report: %v", err)
	}
}

// TestDocsStacksExamples runs the first example block of docs/stacks.md as
// a shell script, with real probes, each recording for 2 s rather than 10:
// ./app is testdata/stacks/chain.c, and copies of it that run and sleep in
// a loop meanwhile are what the profile and the off-CPU examples see. The
// block must exit 0, and `stacks leaf.arrow` must print chain's truth.
// ./app lingers 500 ms before it exits, as the other stack tests' chain
// does: a process that exits within a few milliseconds of its first event
// may be gone before a loaded recorder reads its mappings.
func TestDocsStacksExamples(t *testing.T) {
	bin, _ := bpftapeBin(t)
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "stacks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(block, "bpftape stacks leaf.arrow") {
		t.Fatalf("docs/stacks.md's first block is not the one this test knows:\n%s", block)
	}
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "stacks", "chain.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CompileC(filepath.Join(dir, "app"), "-O0", "-fno-omit-frame-pointer", "-fcf-protection=none", "-g", "-DLINGER_MS=500", src); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bpftape")); err != nil {
		t.Fatal(err)
	}
	script := "(while :; do ./app 2000 20 >/dev/null; done) & loop=$!\ntrap 'kill $loop' EXIT\n" +
		strings.ReplaceAll(block, "-d 10s", "-d 2s") +
		"bpftape stacks leaf.arrow > leaf.folded\n"
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	if r := runBin(t, cmd); r.code != 0 {
		t.Fatalf("the examples exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	folded, err := os.ReadFile(filepath.Join(dir, "leaf.folded"))
	if err != nil || strings.TrimSpace(string(folded)) != "main;top;mid;leaf 1000" {
		t.Errorf("stacks leaf.arrow printed %q (%v), want chain's truth, main;top;mid;leaf 1000", folded, err)
	}
	for _, f := range []string{"prof.svg", "prof.folded", "offcpu.svg", "diff.svg", "prof.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s was not written (%v)", f, err)
		}
	}
}
