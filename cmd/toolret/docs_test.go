package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/cli"
)

// TestDocsCommands parses every toolret command line of README.md and docs/ (in code blocks)
// with the real command's flag set, nothing run: each command and flag must exist and each
// value parse. Shell variables stand for values ($X becomes "x"). Of a synopsis (optional
// parts in brackets) or an elided line ("..."), the flag names are checked.
func TestDocsCommands(t *testing.T) {
	files := docFiles()
	cli.CheckOnly = true
	defer func() { cli.CheckOnly = false }()
	n := 0
	for _, f := range files {
		for _, c := range docCommands(t, f) {
			n++
			if c.synopsis {
				checkSynopsis(t, f, c)
				continue
			}
			var code int
			out := capture(t, func() { code = run(c.args, os.Stderr) })
			if !strings.Contains(out, cli.ErrCheckOnly.Error()) {
				t.Errorf("%s:%d: toolret %s: exit %d: %s", f, c.line, strings.Join(c.args, " "), code, firstLine(out))
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d command lines in the docs: the extraction is broken", n)
	}
	t.Logf("%d command lines checked", n)
}

type docCommand struct {
	line int
	args []string
	// synopsis is a line with optional parts in brackets ("[-depth 30]"): only its flag
	// names are checked.
	synopsis bool
	// text is the command line as written after "toolret", without a trailing comment.
	text string
}

var flagName = regexp.MustCompile(`(?:^|[\s\[|])-([a-z][a-z0-9-]*)`)

// checkSynopsis checks that every flag a synopsis line names is one of its command's flags
// (as -help-flags lists them).
func checkSynopsis(t *testing.T, file string, c docCommand) {
	var cmd []string
	for _, w := range c.args {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") || !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w) {
			break
		}
		cmd = append(cmd, w)
	}
	out := capture(t, func() { run(append(cmd, "-"+cli.HelpFlags), os.Stderr) })
	for _, m := range flagName.FindAllStringSubmatch(strings.Join(c.args, " "), -1) {
		if !strings.Contains(out, "  -"+m[1]+" ") && !strings.Contains(out, "  -"+m[1]+"\n") {
			t.Errorf("%s:%d: toolret %s names -%s, which is not one of its flags", file, c.line, strings.Join(cmd, " "), m[1])
		}
	}
}

var (
	// A command's own main (go run ./cmd/eval ...) is the toolret command of its name.
	prefix  = regexp.MustCompile(`^(?:\$ )?(?:[A-Z_]+=\S* )*(?:go run (?:-tags \w+ )?\./cmd/(?:toolret|(bench|convert|encode|eval|export|hub|import|serve|train))|(?:\./)?bin/toolret|\$B/toolret|toolret)\s+(.*)$`)
	varRef  = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)
	noCheck = map[string]bool{"hub download": true, "hub path": true, "version": false}
)

// docCommands returns the toolret command lines in the code blocks of the markdown file.
func docCommands(t *testing.T, path string) []docCommand {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	in, start, cont := false, 0, ""
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if cont == "" {
			start = ln
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " "), `\`); ok {
			cont += s + " "
			continue
		}
		l, cont = strings.TrimSpace(cont+l), ""
		m := prefix.FindStringSubmatch(l)
		if m == nil || strings.Contains(l, "$(") {
			continue
		}
		if m[1] != "" {
			m[2] = m[1] + " " + m[2]
		}
		m = []string{m[0], m[2]}
		syn := strings.Contains(m[1], "[") || strings.Contains(l, "...") || strings.Contains(l, "…")
		args := words(varRef.ReplaceAllString(m[1], "x"))
		if syn {
			args = strings.Fields(strings.SplitN(m[1], " #", 2)[0])
		}
		if len(args) == 0 || noCheck[args[0]] || len(args) > 1 && noCheck[args[0]+" "+args[1]] || args[0] == "hub" && len(args) > 1 && args[1] != "import" && args[1] != "import-onnx" {
			continue
		}
		text := strings.Join(strings.Fields(strings.SplitN(m[1], " #", 2)[0]), " ")
		out = append(out, docCommand{start, args, syn, text})
	}
	return out
}

// words splits a shell command line into words: quotes group, a comment, redirection, pipe,
// `&&` or `;` ends the command.
func words(s string) []string {
	var out []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	flush := func() {
		if inWord {
			out = append(out, w.String())
		}
		w.Reset()
		inWord = false
	}
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord, r == '>' || r == '|' || r == ';' || r == '&' || r == '<':
			flush()
			return out
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// docFiles returns README.md and the pages of docs/, in the order run-docs.sh runs them: the
// README's tour first.
func docFiles() []string {
	files, _ := filepath.Glob("../../docs/*.md")
	return append([]string{"../../README.md"}, files...)
}
