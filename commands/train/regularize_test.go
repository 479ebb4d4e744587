package traincmd

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
)

// TestTrainRegularization: -freeze-embeddings and -tool-dropout give the task's
// regularisation; a run made before the flags resumes without them and refuses them with
// another value than their default; -tool-dropout must be a probability below 1.
func TestTrainRegularization(t *testing.T) {
	old := &rundir.Meta{Kind: "biencoder", Args: map[string]string{"batch": "32"}}
	recorded := &rundir.Meta{Kind: "biencoder", Args: map[string]string{"freeze-embeddings": "true", "tool-dropout": "0.2"}}
	for _, c := range []struct {
		name string
		meta *rundir.Meta
		args []string
		want biencoder.Regularization
		err  string
	}{
		{"new run, default", nil, nil, biencoder.Regularization{}, ""},
		{"new run, both", nil, []string{"-freeze-embeddings", "-tool-dropout", "0.2"}, biencoder.Regularization{FreezeEmbeddings: true, ToolDropout: 0.2}, ""},
		{"dropout 1", nil, []string{"-tool-dropout", "1"}, biencoder.Regularization{}, "-tool-dropout 1: a probability, must be in [0, 1)"},
		{"negative dropout", nil, []string{"-tool-dropout", "-0.1"}, biencoder.Regularization{}, "must be in [0, 1)"},
		{"old run", old, nil, biencoder.Regularization{}, ""},
		{"old run given the defaults", old, []string{"-freeze-embeddings=false", "-tool-dropout", "0"}, biencoder.Regularization{}, ""},
		{"old run given -freeze-embeddings", old, []string{"-freeze-embeddings"}, biencoder.Regularization{}, "trained before -freeze-embeddings existed"},
		{"old run given -tool-dropout", old, []string{"-tool-dropout", "0.1"}, biencoder.Regularization{}, "trained before -tool-dropout existed"},
		{"recorded run", recorded, []string{"-freeze-embeddings", "-tool-dropout", "0.2"}, biencoder.Regularization{FreezeEmbeddings: true, ToolDropout: 0.2}, ""},
		{"tool tower", nil, []string{"-freeze-tower", "tool"}, biencoder.Regularization{FreezeTower: "tool"}, ""},
		{"query tower", nil, []string{"-freeze-tower", "query"}, biencoder.Regularization{FreezeTower: "query"}, ""},
		{"unknown tower", nil, []string{"-freeze-tower", "tools"}, biencoder.Regularization{}, `freeze tower "tools": want query or tool`},
		{"old run given -freeze-tower", old, []string{"-freeze-tower", "tool"}, biencoder.Regularization{}, "trained before -freeze-tower existed"},
	} {
		fs := flag.NewFlagSet("train x", flag.ContinueOnError)
		fs.String("run", "R", "")
		freeze := fs.Bool("freeze-embeddings", false, "")
		drop := fs.Float64("tool-dropout", 0, "")
		tower := fs.String("freeze-tower", "", "")
		if err := cli.Parse(fs, c.args); err != nil {
			t.Fatal(err)
		}
		r, err := trainRegularization(fs, c.meta, *freeze, *drop, *tower)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, %v; want an error containing %q", c.name, r, err, c.err)
		case c.err == "" && (err != nil || r != c.want):
			t.Errorf("%s: %v, %v; want %v", c.name, r, err, c.want)
		}
	}
	// Through the command: refusals before anything is loaded.
	dir := t.TempDir()
	if err := rundir.Create(dir, old); err != nil {
		t.Fatal(err)
	}
	if err := biencoderCmd([]string{"-run", dir, "-resume", "-tool-dropout", "0.1", "-quiet"}); err == nil || !strings.Contains(err.Error(), "trained before -tool-dropout") {
		t.Errorf("resume of a run made before -tool-dropout, given it: %v", err)
	}
	q2q := filepath.Join(t.TempDir(), "q2q")
	if err := biencoderCmd([]string{"-run", q2q, "-objective", "query2query", "-freeze-embeddings", "-quiet"}); err == nil || !strings.Contains(err.Error(), "apply to -objective query2tool") {
		t.Errorf("query2query with -freeze-embeddings: %v", err)
	}
	shared := filepath.Join(t.TempDir(), "shared")
	if err := biencoderCmd([]string{"-run", shared, "-freeze-tower", "tool", "-quiet"}); err == nil || !strings.Contains(err.Error(), "needs -separate-towers") {
		t.Errorf("-freeze-tower with one shared tower: %v", err)
	}
}

// TestTrainRegularizationRun trains two steps of a tiny bi-encoder with both flags: run.json
// records them, the word embeddings of the two checkpoints are equal while the layers moved
// (a constant learning rate: a linear schedule ends at 0 on the last step), and -resume
// with another -tool-dropout is refused.
func TestTrainRegularizationRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	run := filepath.Join(t.TempDir(), "run")
	args := []string{"-run", run, "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "8", "-vocab-size", "500",
		"-epochs", "1", "-max-steps", "2", "-eval-every", "1", "-lr", "1e-2", "-schedule", "constant", "-test", "", "-quiet"}
	if err := biencoderCmd(append(args, "-freeze-embeddings", "-tool-dropout", "0.2")); err != nil {
		t.Fatal(err)
	}
	meta, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Args["freeze-embeddings"] != "true" || meta.Args["tool-dropout"] != "0.2" {
		t.Errorf("run.json args: freeze-embeddings %q, tool-dropout %q", meta.Args["freeze-embeddings"], meta.Args["tool-dropout"])
	}
	var words, layer [][]byte
	for _, step := range []int{1, 2} {
		store := restoreStep(t, run, step)
		for i, name := range []string{biencoder.WordEmbeddings, "encoder.layer.0.output.dense.weight"} {
			v := encoder.Variable(store, "", name)
			if v == nil {
				t.Fatalf("step %d: no %s", step, name)
			}
			var b []byte
			v.MustValue().ConstBytes(func(x []byte) { b = append(b, x...) })
			if i == 0 {
				words = append(words, b)
			} else {
				layer = append(layer, b)
			}
		}
	}
	if !bytes.Equal(words[0], words[1]) {
		t.Error("the word embeddings changed between steps 1 and 2 with -freeze-embeddings")
	}
	if bytes.Equal(layer[0], layer[1]) {
		t.Error("the layer weights did not change between steps 1 and 2")
	}
	if err := biencoderCmd([]string{"-run", run, "-resume", "-tool-dropout", "0.3", "-quiet"}); err == nil || !strings.Contains(err.Error(), "tool-dropout 0.3 != recorded 0.2") {
		t.Errorf("resume with another -tool-dropout: %v", err)
	}
}

// TestFreezeTowerRun trains two steps of a bi-encoder with separate towers, both started
// from one HF checkpoint (-init), with the tool tower locked: run.json records it, each
// checkpoint's tool tower still holds the checkpoint's weights, bit for bit, while the query
// tower moved away from them.
func TestFreezeTowerRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	dir := t.TempDir()
	hub := filepath.Join(dir, "hf")
	hf := tinyDebertaV3(t, hub)
	initial := map[string][]byte{}
	for v := range hf.RootScope().IterVariables() {
		initial[v.Path()] = variableBytes(v)
	}
	run := filepath.Join(dir, "run")
	args := []string{"-run", run, "-init", hub, "-batch", "8", "-epochs", "1", "-max-steps", "2", "-eval-every", "1", "-lr", "1e-2",
		"-schedule", "constant", "-test", "", "-quiet", "-separate-towers", "-freeze-tower", "tool"}
	if err := biencoderCmd(args); err != nil {
		t.Fatal(err)
	}
	meta, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Args["freeze-tower"] != "tool" {
		t.Errorf("run.json args: freeze-tower %q", meta.Args["freeze-tower"])
	}
	for _, step := range []int{1, 2} {
		store := restoreStep(t, run, step)
		for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
			same, total := 0, 0
			for v := range encoder.In(store.RootScope(), "/"+tower).IterVariables() {
				want, ok := initial[strings.TrimPrefix(v.Path(), "/"+tower)]
				if !ok {
					t.Errorf("step %d: %s is not in the checkpoint -init gave", step, v.Path())
					continue
				}
				total++
				if bytes.Equal(variableBytes(v), want) {
					same++
				}
			}
			switch {
			case total != len(initial):
				t.Errorf("step %d: the %s tower has %d of the checkpoint's %d variables", step, tower, total, len(initial))
			case tower == biencoder.ToolTower && same != total:
				t.Errorf("step %d: %d of the locked tool tower's %d variables moved from -init's", step, total-same, total)
			case tower == biencoder.QueryTower && same == total:
				t.Errorf("step %d: the query tower did not train (all %d variables as -init's)", step, total)
			}
		}
	}
}

// restoreStep loads the checkpoint of run at step into a new store (go backend).
func restoreStep(t *testing.T, run string, step int) *model.Store {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoints.Load(checkpoints.Dir(run, step))
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		t.Fatal(err)
	}
	return store
}

// TestFreezeTowerFromRun starts separate towers from a trained bi-encoder run (-init RUN, its
// shared encoder into both towers) with the tool tower locked: after two steps the tool tower
// holds the source run's encoder bit for bit and the query tower moved.
func TestFreezeTowerFromRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := biencoderCmd([]string{"-run", src, "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "8", "-vocab-size", "500",
		"-epochs", "1", "-max-steps", "2", "-eval-every", "2", "-test", "", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	source := map[string][]byte{}
	for v := range restoreStep(t, src, 2).RootScope().IterVariables() {
		if strings.HasPrefix(v.Path(), "/optimizer") || strings.HasPrefix(v.Path(), "/global") {
			continue
		}
		source[v.Path()] = variableBytes(v)
	}
	run := filepath.Join(dir, "run")
	if err := biencoderCmd([]string{"-run", run, "-init", src, "-batch", "8", "-epochs", "1", "-max-steps", "2", "-eval-every", "1",
		"-lr", "1e-2", "-schedule", "constant", "-test", "", "-quiet", "-separate-towers", "-freeze-tower", "tool"}); err != nil {
		t.Fatal(err)
	}
	store := restoreStep(t, run, 2)
	for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
		same, total := 0, 0
		for v := range encoder.In(store.RootScope(), "/"+tower).IterVariables() {
			want, ok := source[strings.TrimPrefix(v.Path(), "/"+tower)]
			if !ok {
				continue // a variable the source run does not have (none expected: checked by count)
			}
			total++
			if bytes.Equal(variableBytes(v), want) {
				same++
			}
		}
		switch {
		case total == 0:
			t.Errorf("the %s tower has none of the source run's variables", tower)
		case tower == biencoder.ToolTower && same != total:
			t.Errorf("%d of the locked tool tower's %d variables differ from the source run's", total-same, total)
		case tower == biencoder.QueryTower && same == total:
			t.Errorf("the query tower did not train (all %d variables as the source run's)", total)
		}
	}
}

// variableBytes returns the raw bytes of v's value.
func variableBytes(v *model.Variable) []byte {
	var b []byte
	v.MustValue().ConstBytes(func(x []byte) { b = append(b, x...) })
	return b
}
