package traincmd

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/llm"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/pretrain"
	"github.com/toolret/toolret/models/refiner"
)

// kindFlags is a train command whose flags are declared from its configuration: its flags
// and a fresh copy of its Default*Config.
type kindFlags struct {
	name     string // the command, as the generated section of the docs names it
	flags    func() (*flag.FlagSet, error)
	defaults func() any
}

var kindFlagTable = []kindFlags{
	{"train crossencoder",
		func() (*flag.FlagSet, error) { fs, _, _, err := crossencoderFlags(); return fs, err },
		func() any { c := crossencoder.DefaultTrainConfig(); return &c }},
	{"train classifier",
		func() (*flag.FlagSet, error) { fs, _, _, err := classifierFlags(); return fs, err },
		func() any { c := classifier.DefaultTrainConfig(); return &c }},
	{"train refiner",
		func() (*flag.FlagSet, error) { fs, _, _, err := refinerFlags(); return fs, err },
		func() any { c := refiner.DefaultTrainConfig(); return &c }},
	{"train colt",
		func() (*flag.FlagSet, error) { fs, _, _, err := coltFlags(); return fs, err },
		func() any { c := colt.DefaultTrainConfig(); return &c }},
	{"train pretrain",
		func() (*flag.FlagSet, error) { fs, _, _, err := pretrainFlags(); return fs, err },
		func() any { c := pretrain.DefaultTrainConfig(); return &c }},
	{"train feedback",
		func() (*flag.FlagSet, error) { fs, _, _, err := feedbackFlags(); return fs, err },
		func() any { c := feedback.DefaultCollectConfig(); return &c }},
}

// headOperational is the flags of the commands of kindFlagTable that are not a field of
// their configuration (headFlags, coltFlags, pretrainFlags, feedbackFlags).
var headOperational = map[string]bool{"data": true, "holdout-tools": true, "holdout-seed": true,
	"run": true, "resume": true, "backend": true, "devices": true, "quiet": true}

// TestKindFlagDefaults compares every flag of the commands of kindFlagTable with their
// Default*Config: each field is a flag with a help text whose default is the field's default
// value, and every other flag is operational.
func TestKindFlagDefaults(t *testing.T) {
	for _, k := range kindFlagTable {
		t.Run(k.name, func(t *testing.T) {
			fs, err := k.flags()
			if err != nil {
				t.Fatal(err)
			}
			fields, err := flagcfg.Fields(k.defaults())
			if err != nil {
				t.Fatal(err)
			}
			config := map[string]bool{}
			for _, f := range fields {
				config[f.Name] = true
				if f.Help == "" {
					t.Errorf("field %s (-%s) has no help tag", f.Path, f.Name)
				}
				fl := fs.Lookup(f.Name)
				if fl == nil {
					t.Errorf("field %s has no flag -%s", f.Path, f.Name)
					continue
				}
				if want := defaultString(t, f); fl.DefValue != want {
					t.Errorf("-%s default %q, the configuration's %q", f.Name, fl.DefValue, want)
				}
			}
			fs.VisitAll(func(f *flag.Flag) {
				if !config[f.Name] && !headOperational[f.Name] {
					t.Errorf("-%s is declared by hand, not by a configuration field", f.Name)
				}
			})
		})
	}
}

// defaultString returns the default of f as a flag of its own type prints it.
func defaultString(t *testing.T, f flagcfg.Field) string {
	t.Helper()
	switch v := f.Value().(type) {
	case fmt.Stringer:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// TestFlagReferenceKinds checks the generated flag reference of each command of
// kindFlagTable in docs/command-line-vocabulary.md; -update rewrites it.
func TestFlagReferenceKinds(t *testing.T) {
	for _, k := range kindFlagTable {
		t.Run(k.name, func(t *testing.T) {
			fs, err := k.flags()
			if err != nil {
				t.Fatal(err)
			}
			if err := flagcfg.CheckDoc("../../docs/command-line-vocabulary.md", k.name, fs, *update); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFeedbackFlagHelp checks the names a help tag of feedback.CollectConfig spells out, as
// a tag cannot name a constant.
func TestFeedbackFlagHelp(t *testing.T) {
	fs, _, _, err := feedbackFlags()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, want string }{
		{"llm-url", "$" + llm.KeyEnv},
		{"out", "FILE" + feedback.ConfigSuffix},
	} {
		if u := fs.Lookup(tc.flag).Usage; !strings.Contains(u, tc.want) {
			t.Errorf("-%s help %q does not name %s", tc.flag, u, tc.want)
		}
	}
}
