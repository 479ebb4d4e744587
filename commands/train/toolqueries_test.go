package traincmd

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/rundir"
)

// TestCheckToolQueries: -tool-queries is refused when negative, with -objective query2query
// and with -feedback; a run made before the flag resumes without it and refuses a nonzero
// value; a run that recorded it takes it.
func TestCheckToolQueries(t *testing.T) {
	old := &rundir.Meta{Kind: "biencoder", Args: map[string]string{"batch": "32"}}
	recorded := &rundir.Meta{Kind: "biencoder", Args: map[string]string{"tool-queries": "2"}}
	for _, c := range []struct {
		name          string
		meta          *rundir.Meta
		n             int
		q2q, feedback bool
		err           string
	}{
		{"off", nil, 0, false, false, ""},
		{"new run", nil, 2, false, false, ""},
		{"negative", nil, -1, false, false, "-tool-queries -1: pseudo pairs per tool, must be >= 0"},
		{"query2query", nil, 1, true, false, "applies to -objective query2tool only"},
		{"query2query off", nil, 0, true, false, ""},
		{"feedback", nil, 1, false, true, "not supported with -feedback"},
		{"old run", old, 0, false, false, ""},
		{"old run given it", old, 2, false, false, "trained before -tool-queries existed"},
		{"recorded run", recorded, 2, false, false, ""},
	} {
		fs := flag.NewFlagSet("train x", flag.ContinueOnError)
		fs.String("run", "R", "")
		err := checkToolQueries(fs, c.meta, c.n, c.q2q, c.feedback)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v; want an error containing %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// Through the command: refusals before anything is loaded.
	dir := t.TempDir()
	if err := rundir.Create(dir, old); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"-run", dir, "-resume", "-tool-queries", "1"}, "trained before -tool-queries existed"},
		{[]string{"-run", filepath.Join(t.TempDir(), "q2q"), "-objective", "query2query", "-tool-queries", "2"}, "applies to -objective query2tool only"},
		{[]string{"-run", filepath.Join(t.TempDir(), "fb"), "-feedback", filepath.Join(t.TempDir(), "fb.jsonl"), "-tool-queries", "2"}, "not supported with -feedback"},
		{[]string{"-run", filepath.Join(t.TempDir(), "neg"), "-tool-queries", "-2"}, "must be >= 0"},
	} {
		if err := biencoderCmd(append(c.args, "-quiet")); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v; want an error containing %q", c.args, err, c.err)
		}
	}
}

// TestToolQueriesRun trains one step of a tiny bi-encoder with -tool-queries on a
// held-out-tool view: run.json records the flag, and -resume with another value is refused.
func TestToolQueriesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	run := filepath.Join(t.TempDir(), "run")
	args := []string{"-run", run, "-holdout-tools", "0.2", "-holdout-seed", "1", "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "8",
		"-vocab-size", "500", "-epochs", "1", "-max-steps", "1", "-test", "", "-quiet"}
	if err := biencoderCmd(append(args, "-tool-queries", "2")); err != nil {
		t.Fatal(err)
	}
	meta, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Args["tool-queries"] != "2" {
		t.Errorf("run.json args: tool-queries %q", meta.Args["tool-queries"])
	}
	if err := biencoderCmd([]string{"-run", run, "-resume", "-tool-queries", "3", "-quiet"}); err == nil || !strings.Contains(err.Error(), "tool-queries 3 != recorded 2") {
		t.Errorf("resume with another -tool-queries: %v", err)
	}
}
