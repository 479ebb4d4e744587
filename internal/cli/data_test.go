package cli

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rundir"
)

func TestLoadData(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 3)
	if err != nil {
		t.Fatal(err)
	}
	sp, _, _, err := rundir.Carve(v, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	viewRun := t.TempDir()
	if err := rundir.Create(viewRun, &rundir.Meta{Kind: "biencoder", Dataset: v.Name, Fingerprint: v.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want *data.Holdout // the view loaded
		err  string
	}{
		{"own splits", nil, nil, ""},
		{"zero is off", []string{"-holdout-tools", "0"}, nil, ""},
		{"view", []string{"-holdout-tools", "0.2", "-holdout-seed", "3"}, &data.Holdout{Fraction: 0.2, Seed: 3}, ""},
		{"default seed", []string{"-holdout-tools", "0.3"}, &data.Holdout{Fraction: 0.3, Seed: 1}, ""},
		{"retriever's view", []string{"-first-stage", viewRun}, &data.Holdout{Fraction: 0.2, Seed: 3}, ""},
		{"given view wins", []string{"-first-stage", viewRun, "-holdout-tools", "0.4"}, &data.Holdout{Fraction: 0.4, Seed: 1}, ""},
		{"fraction 1", []string{"-holdout-tools", "1"}, nil, "-holdout-tools 1: must be in [0, 1)"},
		{"negative", []string{"-holdout-tools", "-0.1"}, nil, "-holdout-tools -0.1"},
		{"no tool", []string{"-holdout-tools", "0.001"}, nil, "-holdout-tools 0.001 -holdout-seed 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			Data(fs)
			FirstStage(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := LoadData(fs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got.Holdout == nil) != (tc.want == nil) || tc.want != nil && *got.Holdout != *tc.want {
				t.Fatalf("loaded view %+v, want %+v", got.Holdout, tc.want)
			}
			// The view taken from the retriever is recorded in the flags (run.json's args).
			if tc.want != nil && Args(fs)["holdout-tools"] == "0" {
				t.Errorf("flags do not record the view: %v", Args(fs))
			}
		})
	}
}
