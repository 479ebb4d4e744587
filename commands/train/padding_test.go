package traincmd

import (
	"flag"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// TestTrainPadding: -pad-multiple gives the padding of new runs and of runs that recorded
// it; a run made before the flag resumes with the tokenizer's buckets, and giving the flag to
// it is refused; -pad-multiple also goes through the recorded-flags check of -resume.
func TestTrainPadding(t *testing.T) {
	old := &rundir.Meta{Kind: "biencoder", Args: map[string]string{"batch": "32"}}
	recorded := &rundir.Meta{Kind: "biencoder", Args: map[string]string{"pad-multiple": "8"}}
	for _, c := range []struct {
		name string
		meta *rundir.Meta
		args []string
		want biencoder.Padding
		err  string
	}{
		{"new run, default", nil, nil, biencoder.DefaultPadMultiple, ""},
		{"new run, 8", nil, []string{"-pad-multiple", "8"}, 8, ""},
		{"new run, 0 = fixed", nil, []string{"-pad-multiple", "0"}, biencoder.PadFixed, ""},
		{"new run, negative", nil, []string{"-pad-multiple", "-2"}, 0, "-pad-multiple -2: must be >= 0"},
		{"old run", old, nil, biencoder.PadTokenizer, ""},
		{"old run given the flag", old, []string{"-pad-multiple", "16"}, 0, "trained before -pad-multiple"},
		{"recorded run", recorded, []string{"-pad-multiple", "8"}, 8, ""},
	} {
		fs := flag.NewFlagSet("train x", flag.ContinueOnError)
		fs.String("run", "R", "")
		n := fs.Int("pad-multiple", biencoder.DefaultPadMultiple, "")
		if err := cli.Parse(fs, c.args); err != nil {
			t.Fatal(err)
		}
		p, err := trainPadding(fs, c.meta, *n)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, %v; want an error containing %q", c.name, p, err, c.err)
		case c.err == "" && (err != nil || p != c.want):
			t.Errorf("%s: %v, %v; want %v", c.name, p, err, c.want)
		}
	}
	// Through the command: a recorded -pad-multiple is checked as every flag is, and an old
	// run refuses the flag before loading anything.
	dir := t.TempDir()
	if err := rundir.Create(dir, &rundir.Meta{Kind: "biencoder", Args: map[string]string{"pad-multiple": "16"}}); err != nil {
		t.Fatal(err)
	}
	if err := biencoderCmd([]string{"-run", dir, "-resume", "-pad-multiple", "8", "-quiet"}); err == nil || !strings.Contains(err.Error(), "pad-multiple 8 != recorded 16") {
		t.Errorf("resume with another -pad-multiple: %v", err)
	}
	dir = t.TempDir()
	if err := rundir.Create(dir, &rundir.Meta{Kind: "biencoder", Args: map[string]string{"batch": "32"}}); err != nil {
		t.Fatal(err)
	}
	if err := biencoderCmd([]string{"-run", dir, "-resume", "-pad-multiple", "8", "-quiet"}); err == nil || !strings.Contains(err.Error(), "trained before -pad-multiple") {
		t.Errorf("resume of a run made before -pad-multiple, given the flag: %v", err)
	}
}
