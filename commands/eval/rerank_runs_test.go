package evalcmd

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// tinyRunDirs are untrained (randomly initialised) runs of every kind for the embedded
// dataset, with the files real runs have, all on the retriever's dev split (fraction 0.1,
// seed 1); mlc is a "popularity" classifier (see writeTinyRuns), otherDev a reranker run
// recorded with another dev split and noMeta a run directory made before run.json.
type tinyRunDirs struct {
	be, ce, qt, mlc, otherDev, noMeta string
	// popularity is the mlc run's ranking of every tool, for every query.
	popularity []int
}

var (
	tinyOnce sync.Once
	tiny     tinyRunDirs
	tinyErr  error
)

func tinyRuns(t *testing.T) tinyRunDirs {
	t.Helper()
	if testing.Short() {
		t.Skip("runs models")
	}
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolret-eval-runs-")
		if err != nil {
			tinyErr = err
			return
		}
		tinyErr = writeTinyRuns(dir)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tiny
}

// setVariable sets the variable of store whose path ends in suffix.
func setVariable(store *model.Store, suffix string, v *tensors.Tensor) error {
	for vr := range store.IterVariables() {
		if strings.HasSuffix(vr.Path(), suffix) {
			return vr.SetValue(v)
		}
	}
	return os.ErrNotExist
}

func writeTinyRuns(dir string) error {
	d, err := data.Default()
	if err != nil {
		return err
	}
	be, err := backend.Open("go")
	if err != nil {
		return err
	}
	var texts []string
	for _, tool := range d.Tools {
		texts = append(texts, tool.Text)
	}
	for _, q := range d.Queries[:300] {
		texts = append(texts, q.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 600, 2, true)
	if err != nil {
		return err
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		return err
	}
	enc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		return err
	}
	split, trainPart, _, err := rundir.Carve(d, "train", 0.25, 7) // not the defaults: every stage must take it from run.json
	if err != nil {
		return err
	}
	tiny = tinyRunDirs{be: filepath.Join(dir, "be"), ce: filepath.Join(dir, "ce"), qt: filepath.Join(dir, "qt"), mlc: filepath.Join(dir, "mlc"),
		otherDev: filepath.Join(dir, "other-dev"), noMeta: filepath.Join(dir, "no-meta")}
	meta := func(run, kind string, sp rundir.Split) error {
		m := &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}
		if run != tiny.be {
			m.Parent = tiny.be
		}
		return rundir.Create(run, m)
	}
	save := func(run string, store *model.Store, files map[string][]byte) error {
		_, err := checkpoints.Save(run, store, checkpoints.Manifest{Step: 1, Seed: 1, Fingerprint: d.Fingerprint()}, files)
		return err
	}
	newStore := func() (*model.Store, error) {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s, enc.Init(s.RootScope(), 3)
	}

	bcfg := &biencoder.Config{Encoder: enc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 32, ToolMaxLen: 64, Similarity: "cosine", Temperature: 0.05}
	files, err := rundir.WriteModelFiles(tiny.be, biencoder.ConfigFile, bcfg.Marshal(), tok)
	if err != nil {
		return err
	}
	store, err := newStore()
	if err != nil {
		return err
	}
	if err := firstErr(meta(tiny.be, "biencoder", split), save(tiny.be, store, files)); err != nil {
		return err
	}

	ccfg := &crossencoder.Config{Encoder: enc, MaxLen: 64, LossKind: crossencoder.LossBCE}
	if files, err = rundir.WriteModelFiles(tiny.ce, crossencoder.ConfigFile, ccfg.Marshal(), tok); err != nil {
		return err
	}
	if store, err = newStore(); err != nil {
		return err
	}
	// Scoring once creates the head's variables.
	if _, err := crossencoder.NewModel(ccfg, tok, be, store, texts[:len(d.Tools)]).Score(context.Background(), "q", []int{0}); err != nil {
		return err
	}
	if err := firstErr(meta(tiny.ce, "crossencoder", split), save(tiny.ce, store, files)); err != nil {
		return err
	}
	other, _, _, err := rundir.Carve(d, "train", 0.25, 8)
	if err != nil {
		return err
	}
	if err := firstErr(meta(tiny.otherDev, "crossencoder", other), os.MkdirAll(tiny.noMeta, 0o755)); err != nil {
		return err
	}

	// The mlc run ranks tools by popularity in the training part, whatever the query: its
	// head's weights are 0 and its biases decrease along that order.
	count := make([]int, len(d.Tools))
	for _, rel := range trainPart.Relevant {
		for _, a := range rel {
			count[a]++
		}
	}
	tiny.popularity = make([]int, len(d.Tools))
	for i := range tiny.popularity {
		tiny.popularity[i] = i
	}
	sort.SliceStable(tiny.popularity, func(i, j int) bool { return count[tiny.popularity[i]] > count[tiny.popularity[j]] })
	bias := make([]float32, len(d.Tools))
	for r, a := range tiny.popularity {
		bias[a] = 2 - 0.05*float32(r)
	}
	for _, c := range []struct {
		run, kind string
		cfg       *classifier.Config
	}{
		{tiny.qt, "classifier", &classifier.Config{Kind: classifier.KindQueryType, Encoder: enc, MaxLen: 32, Labels: []string{classifier.LabelSingle, classifier.LabelMulti}, LossKind: "ce"}},
		{tiny.mlc, "classifier", &classifier.Config{Kind: classifier.KindMLC, Encoder: enc, MaxLen: 32, Labels: classifier.ToolLabels(d), LossKind: "bce"}},
	} {
		if files, err = rundir.WriteModelFiles(c.run, classifier.ConfigFile, c.cfg.Marshal(), tok); err != nil {
			return err
		}
		if store, err = newStore(); err != nil {
			return err
		}
		if _, err := (&classifier.Model{Cfg: c.cfg, Tok: tok, Backend: be, Store: store}).Probabilities([]string{"q"}); err != nil {
			return err
		}
		if c.run == tiny.mlc {
			if err := firstErr(
				setVariable(store, "/classifier/weight", tensors.FromFlatDataAndDimensions(make([]float32, len(d.Tools)*16), len(d.Tools), 16)),
				setVariable(store, "/classifier/bias", tensors.FromFlatDataAndDimensions(bias, len(d.Tools)))); err != nil {
				return err
			}
		}
		if err := firstErr(meta(c.run, c.kind, split), save(c.run, store, files)); err != nil {
			return err
		}
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
