package toolret_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	traincmd "github.com/toolret/toolret/commands/train"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
)

// testbag is a model kind defined in this file by one registration (below), as a new kind's
// package would: its name, help line, typed configuration, library Train, `toolret train
// testbag` command, ranker for evaluation and export facet. TestNewKind trains, resumes,
// exports and evaluates it through the registry alone (the commands' dispatch, toolret.Train,
// toolret.Export and toolret.Evaluate), with nothing else in toolret naming it.
//
// Its model is a tiny randomly initialised BERT bi-encoder (exporttest) saved as one
// checkpoint per epoch: the kind proves the plumbing, not learning.
const (
	testbagKind       = "testbag"
	testbagConfigFile = "testbag.json"
)

// testbagConfig is the testbag kind's typed training configuration (recorded in run.json).
type testbagConfig struct {
	Model struct {
		Hidden int    `json:"hidden"`
		Seed   uint64 `json:"seed"`
	} `json:"model"`
	Training struct {
		Epochs int `json:"epochs"`
	} `json:"training"`
	// Operational, not recorded.
	RunDir  string `json:"-"`
	Resume  bool   `json:"-"`
	Backend string `json:"-"`
}

func defaultTestbag() testbagConfig {
	var c testbagConfig
	c.Model.Hidden, c.Model.Seed, c.Training.Epochs = 16, 1, 1
	return c
}

func init() {
	newConfig, train := kinds.Typed(testbagKind, defaultTestbag, trainTestbag, func(r *kinds.Result) *kinds.Result { return r })
	kinds.Register(kinds.Kind{
		Name:       testbagKind,
		Help:       "a test kind (kind_test.go)",
		ConfigFile: testbagConfigFile,
		NewConfig:  newConfig,
		Train:      train,
		Command:    testbagCmd,
		Rank: func(dir string, be compute.Backend, d *data.Dataset) (rank.Ranker, error) {
			e, err := biencoder.LoadRun(dir, be)
			if err != nil {
				return nil, err
			}
			return e.Ranker(d, "text", "train")
		},
		Export: export.Facet(func(dir string, be compute.Backend) (*export.Model, error) {
			e, err := biencoder.LoadRun(dir, be)
			if err != nil {
				return nil, err
			}
			m := export.FromEmbedder(e)
			m.Kind = testbagKind
			return m, nil
		}, export.FirstStageBiEncoder, export.FormatHF, export.FormatIndex),
	})
}

// testbagCmd is `toolret train testbag`: flags into the typed configuration, then Train.
func testbagCmd(args []string) error {
	cfg := defaultTestbag()
	fs := flag.NewFlagSet("train testbag", flag.ContinueOnError)
	fs.StringVar(&cfg.RunDir, "run", "", "run directory")
	fs.BoolVar(&cfg.Resume, "resume", false, "continue the run")
	fs.IntVar(&cfg.Training.Epochs, "epochs", cfg.Training.Epochs, "epochs")
	fs.Uint64Var(&cfg.Model.Seed, "seed", cfg.Model.Seed, "initialisation seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := kinds.Train(context.Background(), testbagKind, cfg)
	return err
}

// trainTestbag trains (or, with Resume, continues) a testbag run: one checkpoint per epoch.
func trainTestbag(ctx context.Context, cfg testbagConfig) (*kinds.Result, error) {
	dir := cfg.RunDir
	if dir == "" {
		return nil, errors.New("train testbag: no run directory")
	}
	done := 0
	if cfg.Resume {
		m, err := rundir.Read(dir)
		if err != nil {
			return nil, err
		}
		if m.Kind != testbagKind {
			return nil, fmt.Errorf("resume %s: a %s run, not a %s one", dir, m.Kind, testbagKind)
		}
		rec := defaultTestbag()
		if _, err := m.DecodeConfig(&rec, func(map[string]string) error { return errors.New("no typed configuration") }); err != nil {
			return nil, err
		}
		if err := rundir.ConfigDiffError(dir, rundir.ConfigDiff(&rec, &cfg, "epochs")); err != nil {
			return nil, err
		}
		steps, err := checkpoints.List(dir)
		if err != nil {
			return nil, err
		}
		if len(steps) > 0 {
			done = steps[len(steps)-1]
		}
	} else {
		if err := rundir.CheckNew(dir); err != nil {
			return nil, err
		}
		m := &rundir.Meta{Kind: testbagKind}
		if err := m.SetConfig(cfg); err != nil {
			return nil, err
		}
		if err := rundir.Create(dir, m); err != nil {
			return nil, err
		}
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return nil, err
	}
	tok, err := exporttest.Tokenizer()
	if err != nil {
		return nil, err
	}
	bc, err := exporttest.Config(exporttest.Options{Hidden: cfg.Model.Hidden, Layers: 1, Heads: 2}, tok.VocabSize())
	if err != nil {
		return nil, err
	}
	m, err := export.NewBiEncoder(bc, tok, be, cfg.Model.Seed)
	if err != nil {
		return nil, err
	}
	files, err := biencoder.WriteRunFiles(dir, bc, tok)
	if err != nil {
		return nil, err
	}
	if files[testbagConfigFile], err = json.Marshal(cfg); err != nil {
		return nil, err
	}
	for e := done + 1; e <= cfg.Training.Epochs; e++ {
		man := checkpoints.Manifest{Step: e, Epoch: e, Seed: cfg.Model.Seed, Extra: map[string]any{"best": map[string]any{"step": e}}}
		if _, err := checkpoints.Save(dir, m.Store, man, files); err != nil {
			return nil, err
		}
	}
	return &kinds.Result{RunDir: dir, Config: &cfg}, nil
}

// TestNewKind: a kind registered once (testbag) is listed by `toolret train help`, trains
// through the command, resumes through toolret.Train (refusing a changed setting), exports
// in the formats it registered (and is refused the others) and evaluates through
// toolret.Evaluate.
func TestNewKind(t *testing.T) {
	ctx := context.Background()
	if !strings.Contains(traincmd.Summary(), testbagKind) {
		t.Errorf("train's help line %q does not list the registered kind %s", traincmd.Summary(), testbagKind)
	}
	run := filepath.Join(t.TempDir(), "run")
	if rc := traincmd.Main([]string{testbagKind, "-run", run, "-epochs", "1"}); rc != 0 {
		t.Fatalf("toolret train %s: exit %d", testbagKind, rc)
	}
	if k, err := kinds.Of(run); err != nil || k.Name != testbagKind {
		t.Fatalf("kinds.Of(run) = %q, %v", k.Name, err)
	}

	// Resume: more epochs continue the run; a changed setting is refused.
	cfg, err := toolret.NewConfig(testbagKind)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*testbagConfig)
	c.RunDir, c.Resume, c.Training.Epochs = run, true, 3
	if _, err := toolret.Train(ctx, testbagKind, c); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if steps, err := checkpoints.List(run); err != nil || !slices.Equal(steps, []int{1, 2, 3}) {
		t.Errorf("checkpoints after resuming to 3 epochs: %v, %v", steps, err)
	}
	c.Model.Seed = 9
	if _, err := toolret.Train(ctx, testbagKind, c); err == nil || !strings.Contains(err.Error(), "seed 9 != recorded 1") {
		t.Errorf("resume with another seed: %v, want a refusal", err)
	}

	// Export: the formats the kind registered; the others refused.
	for _, tc := range []struct {
		format, wantErr string
	}{
		{export.FormatHF, ""},
		{export.FormatIndex, ""},
		{export.FormatONNX, "testbag, which does not export as onnx"},
	} {
		t.Run("export-"+tc.format, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tc.format)
			man, err := toolret.Export(ctx, toolret.ExportConfig{Model: run, Format: tc.format, Out: out})
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("export %s: %v, want an error containing %q", tc.format, err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("export %s: %v", tc.format, err)
			case man.Kind != testbagKind || (tc.format == export.FormatIndex && (man.Stage() != export.FirstStageBiEncoder || man.Tools == 0)):
				t.Errorf("export %s: manifest kind %q, first stage %q, %d tools", tc.format, man.Kind, man.Stage(), man.Tools)
			}
		})
	}

	// Evaluate: the run ranks through its registered Rank.
	r, err := toolret.Evaluate(ctx, toolret.EvalConfig{Run: run})
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	if r.Overall.N == 0 || r.Split != "test" {
		t.Errorf("evaluate: %d queries of split %q", r.Overall.N, r.Split)
	}
}
