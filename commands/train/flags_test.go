package traincmd

import (
	"flag"
	"testing"

	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

var update = flag.Bool("update", false, "rewrite the generated flag reference of docs/command-line-vocabulary.md")

// TestBiEncoderFlagDefaults compares every flag of train biencoder with DefaultTrainConfig:
// each field of the configuration is a flag whose default is the field's default value (as
// run.json records it, rundir.ConfigArgs), and every other flag is operational.
func TestBiEncoderFlagDefaults(t *testing.T) {
	fs, _, _, err := biencoderFlags()
	if err != nil {
		t.Fatal(err)
	}
	def := biencoder.DefaultTrainConfig()
	renamed := map[string]string{"retriever": "first-stage"} // json name -> flag name
	for name, want := range rundir.ConfigArgs(def) {
		if n, ok := renamed[name]; ok {
			name = n
		}
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("TrainConfig field %s has no flag", name)
			continue
		}
		if f.DefValue != want {
			t.Errorf("-%s default %q, DefaultTrainConfig %q", name, f.DefValue, want)
		}
	}
	fields, err := flagcfg.Fields(&def)
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]bool{}
	for _, f := range fields {
		config[f.Name] = true
		if f.Help == "" {
			t.Errorf("TrainConfig field %s (-%s) has no help tag", f.Path, f.Name)
		}
	}
	for _, n := range []string{"max-time", "query-prompt", "tool-prompt"} {
		if !config[n] {
			t.Errorf("-%s is not declared by TrainConfig", n)
		}
	}
	operational := map[string]bool{"run": true, "resume": true, "backend": true, "devices": true, "quiet": true}
	fs.VisitAll(func(f *flag.Flag) {
		if !config[f.Name] && !operational[f.Name] {
			t.Errorf("-%s is declared by hand, not by a TrainConfig field", f.Name)
		}
	})
}

// TestFlagReference checks the generated flag reference of train biencoder in
// docs/command-line-vocabulary.md; -update rewrites it.
func TestFlagReference(t *testing.T) {
	fs, _, _, err := biencoderFlags()
	if err != nil {
		t.Fatal(err)
	}
	if err := flagcfg.CheckDoc("../../docs/command-line-vocabulary.md", "train biencoder", fs, *update); err != nil {
		t.Error(err)
	}
}
