package evalcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
)

// fbFixture is a tiny dataset on disk (the embedded dataset's tools, 20 judged train and 30
// judged test queries), a random bi-encoder run, the same with an iteration marker, a random
// mlc classifier run, and a prf collection of the test split made with the bi-encoder.
type fbFixture struct {
	dir, data, be, marked, mlc, fb string
	d                              *data.Dataset
}

const testMarker = "Iteration %d: "

func newFBFixture(t *testing.T) *fbFixture {
	t.Helper()
	dir := t.TempDir()
	full, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sub := *full
	sub.Splits, sub.Scenes, sub.SceneIDs = map[string]*data.Split{}, nil, nil
	for name, n := range map[string]int{"train": 20, "test": 30} {
		src := full.Splits[name]
		dst := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range src.Judged()[:n] {
			dst.Queries = append(dst.Queries, q)
			dst.Relevant[q] = src.Relevant[q]
		}
		sub.Splits[name] = dst
	}
	f := &fbFixture{dir: dir, data: filepath.Join(dir, "data"), be: filepath.Join(dir, "be"), marked: filepath.Join(dir, "marked"),
		mlc: filepath.Join(dir, "mlc"), fb: filepath.Join(dir, "fb.jsonl")}
	if err := data.WriteBEIR(&sub, f.data); err != nil {
		t.Fatal(err)
	}
	if f.d, err = data.Load(f.data); err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	o := exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}
	if err := exporttest.WriteRun(f.be, o, bk, 3); err != nil {
		t.Fatal(err)
	}
	writeMarkedRun(t, f.marked, o, 3)
	if err := exporttest.WriteClassifierRun(f.mlc, exporttest.ClassifierOptions{}, bk, 1); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(f.mlc, rundir.MetaFile)) // it names the whole embedded dataset
	rk, _, err := candidates.Open(candidates.Source{Kind: "bi-encoder", Run: f.be}, f.d, nil, bk)
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := feedback.LoadJudge(f.mlc, f.d, bk)
	if err != nil {
		t.Fatal(err)
	}
	prf, err := feedback.NewPRF(j, feedback.PRFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := feedback.Run(context.Background(), feedback.Config{Data: f.d, Ranker: rk, Rewriter: prf, Splits: []string{"test"}, K: 5, Iterations: 3,
		Out: f.fb, Settings: map[string]string{"refiner": "prf"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Refinements == 0 || sum.Reasons[feedback.ReasonNA] == 0 {
		t.Fatalf("collection %+v: want refinements and early stops", sum)
	}
	return f
}

// writeMarkedRun writes a random bi-encoder run (as exporttest.WriteRun) whose configuration
// records the iteration marker testMarker.
func writeMarkedRun(t *testing.T, dir string, o exporttest.Options, seed uint64) {
	t.Helper()
	be, _ := backend.Open("go")
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := exporttest.Config(o, tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Marker = testMarker
	m, err := export.NewBiEncoder(cfg, tok, be, seed)
	if err != nil {
		t.Fatal(err)
	}
	files, err := biencoder.WriteRunFiles(dir, cfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	man := checkpoints.Manifest{Step: 1, Seed: seed, Extra: map[string]any{"best": map[string]any{"step": 1}}}
	if _, err := checkpoints.Save(dir, m.Store, man, files); err != nil {
		t.Fatal(err)
	}
}

type fbRound struct {
	Round, Active, Refined int
	Metrics                map[string]float64
}

func (f *fbFixture) rounds(t *testing.T, kv map[string]string) []fbRound {
	t.Helper()
	kv["data"] = f.data
	kv["json"] = "true"
	o, err := parse(args(kv), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var res struct{ Rounds []fbRound }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%s: %v", out.String(), err)
	}
	return res.Rounds
}

// TestFeedbackReplayEqualsLive: replaying a prf collection with the bi-encoder that made it
// gives the metrics (and active and refined counts) of every round that the live prf loop
// gives; round 0 is eval -run's ranking; later rounds differ.
func TestFeedbackReplayEqualsLive(t *testing.T) {
	f := newFBFixture(t)
	rep := f.rounds(t, map[string]string{"run": f.be, "feedback": f.fb})
	live := f.rounds(t, map[string]string{"run": f.be, "rewriter": "prf", "prf-model": f.mlc, "iterations": "3", "rewriter-k": "5"})
	if len(rep) != 4 || len(live) != 4 {
		t.Fatalf("%d replayed rounds, %d live: want 4 (0..3)", len(rep), len(live))
	}
	changed := false
	for r := range rep {
		a, b := rep[r], live[r]
		if a.Active != b.Active || a.Refined != b.Refined || fmt.Sprint(a.Metrics) != fmt.Sprint(b.Metrics) {
			t.Errorf("round %d: replay %+v, live %+v", r, a, b)
		}
		if fmt.Sprint(a.Metrics) != fmt.Sprint(rep[0].Metrics) {
			changed = true
		}
	}
	if rep[0].Active != 30 || rep[0].Refined == 0 || rep[3].Active >= 30 || !changed {
		t.Errorf("rounds %+v: want 30 queries at round 0, some refined, some stopped early, metrics that change", rep)
	}
	plain := runJSON(t, map[string]string{"data": f.data, "run": f.be})
	for k, v := range rep[0].Metrics {
		if k != "queries" && plain[k] != v {
			t.Errorf("round 0 %s = %v, eval -run %v", k, v, plain[k])
		}
	}
	// -save-run writes each round's rankings; -compare of rounds 0 and 1 scores them as the
	// rounds' figures.
	saved := filepath.Join(t.TempDir(), "fb.trec")
	f.rounds(t, map[string]string{"run": f.be, "feedback": f.fb, "save-run": saved, "cutoffs": "1,3,5"})
	for r := range 4 {
		if _, err := os.Stat(evaluate.RoundPath(saved, r)); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	cmp := runJSON(t, map[string]string{"data": f.data, "compare": evaluate.RoundPath(saved, 0) + "," + evaluate.RoundPath(saved, 1), "cutoffs": "1,3,5", "compare-samples": "500"})
	rows := cmp["metrics"].([]any)
	if len(rows) != 9 || cmp["queries"].(float64) != 30 {
		t.Fatalf("-compare: %v", cmp)
	}
	for _, x := range rows {
		row := x.(map[string]any)
		m := row["metric"].(string)
		if math.Abs(row["a"].(float64)-rep[0].Metrics[m]) > 0.006 || math.Abs(row["b"].(float64)-rep[1].Metrics[m]) > 0.006 {
			t.Errorf("-compare %s: A %v, B %v; the rounds give %v and %v", m, row["a"], row["b"], rep[0].Metrics[m], rep[1].Metrics[m])
		}
		if p := row["p"].(float64); p <= 0 || p > 1 || row["ci_low"].(float64) > row["diff"].(float64) {
			t.Errorf("-compare %s: %v", m, row)
		}
	}
}

func TestRoundPath(t *testing.T) {
	for in, want := range map[string]string{"runs/x.trec": "runs/x.round2.trec", "x": "x.round2", "a.b/x": "a.b/x.round2"} {
		if got := evaluate.RoundPath(in, 2); got != want {
			t.Errorf("evaluate.RoundPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFeedbackMarker: replaying with an iteration-aware run ranks Mark(marker, t, q^t) at
// round t (checked against the run's own ranker), and its plain eval -run is round 0's.
func TestFeedbackMarker(t *testing.T) {
	f := newFBFixture(t)
	rep := f.rounds(t, map[string]string{"run": f.marked, "feedback": f.fb})
	bk, _ := backend.Open("go")
	emb, err := biencoder.LoadRun(f.marked, bk)
	if err != nil {
		t.Fatal(err)
	}
	if emb.Cfg.Marker != testMarker {
		t.Fatalf("marker %q", emb.Cfg.Marker)
	}
	r, err := emb.Ranker(f.d, "text", "train")
	if err != nil {
		t.Fatal(err)
	}
	_, loops, err := feedback.Read(f.fb)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]feedback.Loop{}
	for _, lp := range loops {
		byID[lp.QueryID] = lp
	}
	s := f.d.Splits["test"]
	judged := s.Judged()
	differ := 0
	for round := range 4 {
		var rk []rank.Ranking
		var rel [][]int
		for _, q := range judged {
			ins := byID[f.d.Queries[q].ID].Instructions()
			tt := min(round, len(ins)-1)
			x, err := r.Rank(context.Background(), []string{biencoder.Mark(testMarker, tt, ins[tt])}, 10)
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := r.Rank(context.Background(), []string{ins[tt]}, 10)
			if fmt.Sprint(plain[0].Tools) != fmt.Sprint(x[0].Tools) {
				differ++
			}
			rk, rel = append(rk, x[0]), append(rel, s.Relevant[q])
		}
		want := metrics.Evaluate(rk, rel, []int{1, 3, 5, 10}).Map()
		for k, v := range want {
			if got := rep[round].Metrics[k]; math.Abs(got-v) > 0.006 {
				t.Errorf("round %d %s = %v, the marked instructions give %v", round, k, got, v)
			}
		}
	}
	if differ == 0 {
		t.Error("marked and unmarked instructions rank alike: the test cannot tell the marker is applied")
	}
	plain := runJSON(t, map[string]string{"data": f.data, "run": f.marked})
	for k, v := range rep[0].Metrics {
		if k != "queries" && plain[k] != v {
			t.Errorf("eval -run of the marked run: %s = %v, round 0 %v", k, plain[k], v)
		}
	}
}

func TestFeedbackFlags(t *testing.T) {
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"run": "x", "feedback": "f", "rewriter": "prf"}, "give one"},
		{map[string]string{"run": "x", "rewriter": "llm"}, `-rewriter "llm"`},
		{map[string]string{"run": "x", "rewriter": "prf"}, "-prf-model"},
		{map[string]string{"feedback": "f"}, "give -run"},
		{map[string]string{"run": "x", "feedback": "f", "ablations": "true"}, "not with -ablations"},
		{map[string]string{"run": "x", "feedback": "f", "iterations": "-1"}, "-iterations -1"},
	} {
		if _, err := parse(args(c.kv), io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}
