package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// cheapDocsCommands are the docs' command lines TestDocsCheapCommands runs as written (a few
// seconds each); every other one is run by scripts/dev/run-docs.sh.
var cheapDocsCommands = []struct {
	text  string
	needs string // a path that must exist, else the case skips
	want  string // in the output
}{
	{"eval -data ../shared/datasets/toollens -method bm25", "../shared/datasets/toollens", "R@5"},
	{"eval -data ../shared/datasets/toollens -method bm25 -holdout-tools 0.2 -holdout-seed 1 -subsets", "../shared/datasets/toollens", "R@5"},
	{"eval -suite zeroshot", "../shared/datasets/zeroshot", "| mean |"},
}

// heavyDocsCommands returns the list of scripts/dev/run-docs.sh (its DRY=1 output).
func heavyDocsCommands(t *testing.T) map[string]bool {
	cmd := exec.Command("bash", "scripts/dev/run-docs.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "DRY=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("DRY=1 scripts/dev/run-docs.sh: %v", err)
	}
	heavy := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		heavy[l] = true
	}
	return heavy
}

// TestDocsCommandsCovered fails for a command line of the docs that neither
// TestDocsCheapCommands runs nor scripts/dev/run-docs.sh lists (a synopsis is run with -h by
// TestDocsSynopses), and for a listed line the docs no longer have.
func TestDocsCommandsCovered(t *testing.T) {
	heavy := heavyDocsCommands(t)
	cheap := map[string]bool{}
	for _, c := range cheapDocsCommands {
		cheap[c.text] = true
	}
	seen := map[string]bool{}
	for _, f := range docFiles() {
		for _, c := range docCommands(t, f) {
			if c.synopsis {
				continue
			}
			seen[c.text] = true
			if !cheap[c.text] && !heavy[c.text] {
				t.Errorf("%s:%d: toolret %s: neither run by TestDocsCheapCommands nor listed in scripts/dev/run-docs.sh", f, c.line, c.text)
			}
		}
	}
	for l := range heavy {
		if !seen[l] {
			t.Errorf("scripts/dev/run-docs.sh lists %q, which no doc has any more", l)
		}
	}
	for l := range cheap {
		if !seen[l] {
			t.Errorf("TestDocsCheapCommands runs %q, which no doc has any more", l)
		}
	}
}

// TestDocsCheapCommands runs the cheap command lines of the docs as written, from the
// repository root.
func TestDocsCheapCommands(t *testing.T) {
	for _, c := range cheapDocsCommands {
		t.Run(c.text, func(t *testing.T) {
			t.Chdir("../..") // the docs' paths are the repository root's
			if _, err := os.Stat(c.needs); err != nil {
				t.Skipf("%s absent: %v", c.needs, err)
			}
			var code int
			old := os.Stdout
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			os.Stdout = w
			done := make(chan []byte)
			go func() { b, _ := io.ReadAll(r); done <- b }()
			stderr := capture(t, func() { code = run(words(c.text), os.Stderr) })
			w.Close()
			os.Stdout = old
			out := string(<-done) + stderr
			if code != 0 || !strings.Contains(out, c.want) {
				t.Errorf("toolret %s: exit %d, output without %q:\n%s", c.text, code, c.want, out)
			}
		})
	}
}

// TestDocsSynopses runs -h of the command of every synopsis line of the docs.
func TestDocsSynopses(t *testing.T) {
	done := map[string]bool{}
	for _, f := range docFiles() {
		for _, c := range docCommands(t, f) {
			if !c.synopsis {
				continue
			}
			var cmd []string
			for _, w := range c.args {
				if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
					break
				}
				cmd = append(cmd, w)
			}
			if k := strings.Join(cmd, " "); !done[k] {
				done[k] = true
				out := capture(t, func() { run(append(cmd, "-h"), os.Stderr) })
				if !strings.Contains(out, "usage: toolret "+k) {
					t.Errorf("%s:%d: toolret %s -h: %s", f, c.line, k, firstLine(out))
				}
			}
		}
	}
}
