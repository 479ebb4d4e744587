package traincmd

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/pretrain"
	"github.com/toolret/toolret/rundir"
)

// pretrainTiny is a tiny pre-training of the embedded dataset with a small training part
// (-dev 0.85 -seed 7: 70 tools and ~290 training queries).
var pretrainTiny = []string{"-dev", "0.85", "-seed", "7", "-layers", "1", "-hidden", "32", "-heads", "2", "-vocab-size", "600",
	"-max-len", "64", "-batch", "32", "-dev-max", "64", "-quiet"}

// TestPretrainCmd pre-trains through the command line and checks the run: its files, the
// recorded dev split (a bi-encoder's with the same -dev and -seed), the loss and dev curves in
// metrics.jsonl and plot.html, the timing record; a finished run resumes to nothing more,
// and a resume with a changed flag is refused.
func TestPretrainCmd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	run := filepath.Join(t.TempDir(), "pre")
	if err := pretrainCmd(append([]string{"-run", run, "-epochs", "2", "-eval-every", "5"}, pretrainTiny...)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pretrain.ConfigFile, biencoder.ConfigFile, "tokenizer.json", "vocab.txt", "metrics.jsonl", "plot.html",
		"summary.json", rundir.MetaFile, pretrain.TimeFile} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("run lacks %s", f)
		}
	}
	m, err := rundir.Read(run)
	if err != nil || m.Kind != "pretrain" {
		t.Fatalf("run.json %+v, %v", m, err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sp, _, _, err := rundir.Carve(d, "train", 0.85, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Split.DevIDs, sp.DevIDs) {
		t.Errorf("recorded %d dev ids: not the carve of -dev 0.85 -seed 7 (%d)", len(m.Split.DevIDs), len(sp.DevIDs))
	}
	b, _ := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	var losses, devCon []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]float64
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, rec["loss"])
		if v, ok := rec["dev_contrastive_loss"]; ok {
			devCon = append(devCon, v)
			for _, k := range []string{"dev_mlm_loss", "dev_mlm_acc", "dev_contrastive_acc", "dev_loss"} {
				if _, ok := rec[k]; !ok {
					t.Errorf("step %v: no %s", rec["step"], k)
				}
			}
		}
	}
	if len(losses) < 20 || len(devCon) < 4 {
		t.Fatalf("%d steps, %d evaluations logged", len(losses), len(devCon))
	}
	if !(devCon[len(devCon)-1] < devCon[0]) {
		t.Errorf("dev contrastive loss %v: did not fall", devCon)
	}
	plot, _ := os.ReadFile(filepath.Join(run, "plot.html"))
	for _, s := range []string{">dev contrastive_loss</li>", ">dev mlm_loss</li>", ">loss (smoothed)</li>"} {
		if !bytes.Contains(plot, []byte(s)) {
			t.Errorf("plot.html has no %s chart", s)
		}
	}
	var tm pretrain.Time
	b, _ = os.ReadFile(filepath.Join(run, pretrain.TimeFile))
	if err := json.Unmarshal(b, &tm); err != nil || tm.Steps != len(losses) || tm.SecondsPerEpoch <= 0 || tm.StepsPerEpoch*2 != tm.Steps {
		t.Errorf("%s %s: %v", pretrain.TimeFile, b, err)
	}
	// The run is also a bi-encoder: it loads and embeds.
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := biencoder.LoadRun(run, bk)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := emb.Embed(biencoder.QueryTower, []string{"weather in oslo"}); err != nil || len(v) != 1 || len(v[0]) != 32 {
		t.Errorf("embedding with the run: %v", err)
	}
	if err := pretrainCmd([]string{"-run", run, "-resume", "-quiet"}); err != nil {
		t.Errorf("resume of a finished run: %v", err)
	}
	if err := pretrainCmd([]string{"-run", run, "-resume", "-lr", "0.1"}); err == nil || !strings.Contains(err.Error(), "lr 0.1 != recorded") {
		t.Errorf("resume with a changed -lr: %v", err)
	}
}

// TestPretrainFlags: bad flags are refused, each named.
func TestPretrainFlags(t *testing.T) {
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	if err := os.MkdirAll(be, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(be, &rundir.Meta{Kind: "biencoder"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"objective", []string{"-objective", "mlm,simcse"}, `-objective: objective "simcse"`},
		{"metric of another objective", []string{"-objective", "contrastive", "-metric", "mlm_acc"}, `-metric "mlm_acc": -objective contrastive reports contrastive_acc`},
		{"retrieval metric", []string{"-metric", "ndcg@5"}, `-metric "ndcg@5"`},
		{"views", []string{"-views", "pairs"}, `-views "pairs"`},
		{"crop min", []string{"-crop-min", "0"}, "-crop-min 0"},
		{"crop max", []string{"-crop-min", "0.4", "-crop-max", "0.3"}, "-crop-max 0.3"},
		{"crop delete", []string{"-crop-delete", "1"}, "-crop-delete 1"},
		{"mask rate", []string{"-mask-rate", "0"}, "-mask-rate 0"},
		{"temperature", []string{"-temperature", "0"}, "-temperature 0"},
		{"weight", []string{"-contrastive-weight", "-1"}, "-contrastive-weight -1"},
		{"batch", []string{"-batch", "1"}, "-batch 1"},
		{"max len", []string{"-max-len", "2"}, "-max-len 2"},
		{"arch", []string{"-arch", "gpt"}, `-arch "gpt"`},
		{"hidden", []string{"-hidden", "0"}, "-hidden 0"},
		{"dev", []string{"-dev", "1"}, "-dev 1"},
		{"warmup", []string{"-warmup", "1"}, "-warmup 1"},
		{"arguments", []string{"extra"}, "unexpected arguments"},
		{"resume without run", []string{"-resume", "-run", ""}, "-resume needs -run"},
		{"dev max", []string{"-dev-max", "-1"}, "-dev-max -1"},
		{"resume another kind", []string{"-resume", "-run", be}, "a biencoder run, not a pretrain run"},
		{"existing run", []string{"-run", be}, "already holds a run"},
	} {
		args := tc.args
		if !slices.Contains(args, "-run") {
			args = append([]string{"-run", filepath.Join(dir, "bad-"+strings.ReplaceAll(tc.name, " ", "-"))}, args...)
		}
		if err := pretrainCmd(args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestPretrainWarmStart pre-trains a tiny encoder, then warm-starts a bi-encoder (-init), a
// cross-encoder (-init, with the pre-training run as -first-stage too), a query-type classifier
// (-init) and another pre-training (-init) from it, each trained at a learning rate too small to move a weight, and
// checks that every encoder weight of their first checkpoint equals the pre-trained one and
// that they use the pre-training run's vocabulary.
func TestPretrainWarmStart(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	pre := filepath.Join(dir, "pre")
	if err := pretrainCmd(append([]string{"-run", pre, "-epochs", "1"}, pretrainTiny...)); err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(pre, pretrain.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pretrain.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	params := pc.Encoder.WithPooler(false).Params()
	want := encoderWeights(t, pre, bk, params)
	vocab, _ := os.ReadFile(filepath.Join(pre, "vocab.txt"))
	// Nothing moves: a learning rate of 1e-12 without weight decay.
	still := []string{"-lr", "1e-12", "-weight-decay", "0", "-epochs", "1", "-quiet"}
	for _, tc := range []struct {
		name string
		cmd  func([]string) error
		args []string
	}{
		{"biencoder", biencoderCmd, []string{"-init", pre, "-dev", "0.85", "-seed", "7", "-batch", "64", "-symmetric", "-test", ""}},
		{"crossencoder", crossencoderCmd, []string{"-init", pre, "-first-stage", pre, "-max-len", "64", "-depth", "5", "-negatives-per-positive", "1", "-batch", "64", "-dev-max", "10", "-test", ""}},
		{"classifier", classifierCmd, []string{"-kind", "querytype", "-init", pre, "-dev", "0.85", "-seed", "7", "-batch", "64", "-test", ""}},
		// Pre-training continued from a run (a new MLM head).
		{"pretrain", pretrainCmd, []string{"-init", pre, "-dev", "0.85", "-seed", "7", "-batch", "32", "-dev-max", "32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, tc.name)
			if err := tc.cmd(append(append([]string{"-run", run}, tc.args...), still...)); err != nil {
				t.Fatal(err)
			}
			if v, _ := os.ReadFile(filepath.Join(run, "vocab.txt")); !bytes.Equal(v, vocab) {
				t.Errorf("vocabulary differs from the pre-training run's")
			}
			got := encoderWeights(t, run, bk, params)
			for _, p := range params {
				w, g := want[p.Name], got[p.Name]
				if len(g) != len(w) {
					t.Fatalf("%s: %d values, pre-trained %d", p.Name, len(g), len(w))
				}
				for i := range w {
					if math.Abs(float64(g[i]-w[i])) > 1e-9 {
						t.Fatalf("%s[%d] = %g, pre-trained %g: not warm-started", p.Name, i, g[i], w[i])
					}
				}
			}
		})
	}
}

// encoderWeights returns the encoder weights (params, at the store root) of a run's best
// checkpoint.
func encoderWeights(t *testing.T, run string, be compute.Backend, params []encoder.Param) map[string][]float32 {
	t.Helper()
	dir, err := rundir.CheckpointDir(run)
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoints.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, p := range params {
		v := encoder.Variable(store, "", p.Name)
		if v == nil {
			t.Fatalf("%s: no variable %s", run, p.Name)
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		x, err := tensors.CopyFlatData[float32](val)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Name] = x
	}
	return out
}
