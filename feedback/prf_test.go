package feedback

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/refiner"
)

// fixedJudge scores tools by id from a table (0 for tools not in it) and records the
// instructions it was asked about.
type fixedJudge struct {
	scores map[string]float32
	err    error
	short  bool // return one score too few
	mu     sync.Mutex
	asked  []string
}

func (j *fixedJudge) Judge(_ context.Context, q string, tools []Tool) ([]float32, error) {
	j.mu.Lock()
	j.asked = append(j.asked, q)
	j.mu.Unlock()
	if j.err != nil {
		return nil, j.err
	}
	out := make([]float32, len(tools))
	for i, t := range tools {
		out[i] = j.scores[t.ID]
	}
	if j.short {
		out = out[1:]
	}
	return out, nil
}

func prfTools() []Tool {
	return []Tool{
		{Index: 0, ID: "a", Name: "Weather", API: "Now", Description: "Current weather conditions for a city, with wind and humidity"},
		{Index: 1, ID: "b", Name: "Mail", API: "Send", Description: "Send an email."},
		{Index: 2, ID: "c", Name: "Flights", API: "Search", Description: ""},
		{Index: 3, ID: "d", Name: "", API: "", Description: "Play music"},
		{Index: 4, ID: "e", Name: "Mail", API: "Send", Description: "Send an email."}, // reads like b
	}
}

// TestPRFRefine checks the rewrite and the stop rules with hand-built judge scores.
func TestPRFRefine(t *testing.T) {
	const q0 = "weather in  Lisbon, then mail it"
	tools := prfTools()
	ab := "weather in Lisbon, then mail it Weather Now: Current weather conditions for a city, with wind and humidity; Mail Send: Send an email"
	for _, c := range []struct {
		name   string
		scores map[string]float32
		opt    PRFOptions
		query  string // q^t (default q0)
		tools  []Tool // default all
		want   string // refined; "" with stop
		stop   bool
		accept string // the "accepted" reply
	}{
		{name: "nothing accepted", scores: map[string]float32{"a": 0.49, "b": 0.2}, stop: true, accept: "none (threshold 0.5)"},
		{name: "no tool retrieved", scores: map[string]float32{"a": 0.9}, tools: []Tool{}, stop: true, accept: "none: no tool retrieved"},
		{name: "two accepted, best first", scores: map[string]float32{"b": 0.7, "a": 0.9, "c": 0.1}, want: ab, accept: "a b"},
		{name: "threshold inclusive, ties by index", scores: map[string]float32{"b": 0.5, "a": 0.5}, want: ab, accept: "a b"},
		{name: "same set as before: N/A", scores: map[string]float32{"b": 0.7, "a": 0.9}, query: ab, stop: true, accept: "a b"},
		{name: "same set, q^t spaced and cased otherwise: N/A", scores: map[string]float32{"b": 0.7, "a": 0.9}, query: "  " + strings.ToUpper(ab), stop: true, accept: "a b"},
		{name: "another set than before", scores: map[string]float32{"c": 0.8}, query: ab, want: "weather in Lisbon, then mail it Flights Search", accept: "c"},
		{name: "capped at max tools", scores: map[string]float32{"a": 0.6, "b": 0.7, "c": 0.8, "d": 0.9}, opt: PRFOptions{MaxTools: 2},
			want: "weather in Lisbon, then mail it d: Play music; Flights Search", accept: "d c"},
		{name: "descriptions clipped at a word", scores: map[string]float32{"a": 0.9}, opt: PRFOptions{MaxChars: 30},
			want: "weather in Lisbon, then mail it Weather Now: Current weather conditions for", accept: "a"},
		{name: "names only", scores: map[string]float32{"a": 0.9, "b": 0.8}, opt: PRFOptions{MaxChars: -1},
			want: "weather in Lisbon, then mail it Weather Now; Mail Send", accept: "a b"},
		{name: "entries reading the same written once", scores: map[string]float32{"b": 0.8, "e": 0.7}, opt: PRFOptions{MaxChars: -1},
			want: "weather in Lisbon, then mail it Mail Send", accept: "b e"},
		{name: "threshold 0.95", scores: map[string]float32{"a": 0.9}, opt: PRFOptions{Threshold: 0.95}, stop: true, accept: "none (threshold 0.95)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := &fixedJudge{scores: c.scores}
			p, err := NewPRF(j, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			in := Input{QueryID: "q1", Original: q0, Query: q0, Iteration: 1, Tools: tools}
			if c.query != "" {
				in.Query = c.query
			}
			if c.tools != nil {
				in.Tools = c.tools
			}
			st, err := p.Rewrite(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if st.Stop != c.stop || st.Refined != c.want || st.Err != "" {
				t.Errorf("step: stop %v, refined %q, err %q; want stop %v, refined %q", st.Stop, st.Refined, st.Err, c.stop, c.want)
			}
			var acc string
			for _, r := range st.Replies {
				if r.Step == "accepted" {
					acc = r.Text
				}
			}
			if acc != c.accept {
				t.Errorf("accepted reply %q, want %q (replies %v)", acc, c.accept, st.Replies)
			}
			for _, q := range j.asked {
				if q != q0 {
					t.Errorf("the judge was asked about %q, not q^0", q)
				}
			}
		})
	}
}

func TestPRFErrors(t *testing.T) {
	in := Input{QueryID: "q1", Original: "q", Query: "q", Tools: prfTools()}
	boom := errors.New("boom")
	p, _ := NewPRF(&fixedJudge{err: boom}, PRFOptions{})
	if _, err := p.Rewrite(context.Background(), in); !errors.Is(err, boom) {
		t.Errorf("judge failure: %v, want it returned (it stops the run)", err)
	}
	p, _ = NewPRF(&fixedJudge{short: true}, PRFOptions{})
	if _, err := p.Rewrite(context.Background(), in); err == nil || !strings.Contains(err.Error(), "4 scores for 5 tools") {
		t.Errorf("short score list: %v", err)
	}
	for _, o := range []PRFOptions{{Threshold: 1.5}, {Threshold: -0.1}, {MaxTools: -1}} {
		if _, err := NewPRF(&fixedJudge{}, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := NewPRF(nil, PRFOptions{}); err == nil {
		t.Error("no judge accepted")
	}
}

// relevanceJudge accepts a query's relevant tools (by the dataset's qrels of both splits):
// a judge that knows the answer, so the loop's rewrites are predictable.
type relevanceJudge struct {
	d   *data.Dataset
	rel map[string]map[int]bool // q^0 -> relevant tool indices
}

func newRelevanceJudge(d *data.Dataset) *relevanceJudge {
	j := &relevanceJudge{d: d, rel: map[string]map[int]bool{}}
	for _, s := range d.Splits {
		for q, ts := range s.Relevant {
			m := map[int]bool{}
			for _, t := range ts {
				m[t] = true
			}
			j.rel[d.Queries[q].Text] = m
		}
	}
	return j
}

func (j *relevanceJudge) Judge(_ context.Context, q string, tools []Tool) ([]float32, error) {
	out := make([]float32, len(tools))
	for i, t := range tools {
		out[i] = 0.2
		if j.rel[q][t.Index] {
			out[i] = 0.9
		}
	}
	return out, nil
}

// TestPRFRun collects the loop with the prf refiner over BM25: every line's refined
// instruction is q^0 plus the accepted tools of its own top K, every loop ends by N/A (or at
// T), the file reads back with Read, a second run over the complete file writes nothing, and
// a run with 4 queries refined at once writes the same file as one at a time.
func TestPRFRun(t *testing.T) {
	d := small(t, 12, 8)
	p, err := NewPRF(newRelevanceJudge(d), PRFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := func(out string, conc int) Config {
		return Config{Data: d, Ranker: ranker(d), Rewriter: p, Splits: []string{"train", "test"}, K: 5, Iterations: 3, Out: out,
			Settings: p.Settings(), Concurrency: conc, Chunk: 3}
	}
	out := filepath.Join(dir, "fb.jsonl")
	sum, err := Run(context.Background(), cfg(out, 1))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queries != 20 || sum.Reasons[ReasonNA]+sum.Reasons[ReasonIterations] != 20 || sum.Reasons[ReasonNA] == 0 || sum.Refinements == 0 {
		t.Fatalf("summary %+v: want 20 loops ended by n/a or iterations, some refined", sum)
	}
	h, loops, err := Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(loops) != 20 || h.Iterations != 3 || h.K != 5 || h.Settings["prf-threshold"] != "0.5" {
		t.Fatalf("read %d loops, header %+v", len(loops), h)
	}
	tools := Tools(d)
	for _, lp := range loops {
		if !lp.Done() {
			t.Fatalf("query %s: loop not finished", lp.QueryID)
		}
		q0 := lp.Lines[0].Query
		for _, l := range lp.Lines {
			if l.Refined == "" {
				continue
			}
			var acc []Tool
			for _, id := range l.Retrieved {
				ti := d.ToolIndex[id]
				if newRelevanceJudge(d).rel[q0][ti] {
					acc = append(acc, tools[ti])
				}
			}
			if want := Rewrite(q0, Accept(acc, ones(len(acc)), 0.5, DefaultPRFTools), DefaultPRFChars); l.Refined != want {
				t.Errorf("query %s iteration %d: refined %q, want %q", lp.QueryID, l.Iteration, l.Refined, want)
			}
		}
	}
	again, err := Run(context.Background(), cfg(out, 1))
	if err != nil || again.Written != 0 || again.Resumed != 20 {
		t.Errorf("re-run over the complete file: %+v, %v; want nothing written", again, err)
	}
	out4 := filepath.Join(dir, "fb4.jsonl")
	if _, err := Run(context.Background(), cfg(out4, 4)); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out4)
	if string(a) != string(b) {
		t.Error("4 queries at once wrote another file than one at a time")
	}
}

func ones(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// TestReadChecks: Read refuses lines out of order or not chained, and leaves a torn last
// line out.
func TestReadChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(lines string) string {
		p := filepath.Join(dir, "f.jsonl")
		os.WriteFile(p, []byte(lines), 0o644)
		os.WriteFile(p+ConfigSuffix, []byte(`{"format":1,"iterations":2}`), 0o644)
		return p
	}
	good := `{"query_id":"1","split":"test","iteration":0,"query":"a","retrieved":["x"],"refined":"b","stop":false}` + "\n" +
		`{"query_id":"1","split":"test","iteration":1,"query":"b","retrieved":["y"],"stop":true,"reason":"n/a"}` + "\n"
	_, loops, err := Read(write(good + `{"query_id":"2","split":"te`))
	if err != nil || len(loops) != 1 || !loops[0].Done() || !reflect.DeepEqual(loops[0].Instructions(), []string{"a", "b"}) {
		t.Errorf("good file with a torn last line: %+v, %v", loops, err)
	}
	for name, c := range map[string]struct{ lines, err string }{
		"not chained":            {strings.Replace(good, `"query":"b"`, `"query":"c"`, 1), "not the previous line's refined"},
		"iteration gap":          {strings.Replace(good, `"iteration":1`, `"iteration":2`, 1), "iteration 2, want 1"},
		"after the last":         {good + strings.Replace(strings.SplitAfter(good, "\n")[1], `"iteration":1`, `"iteration":2`, 1), "after its last"},
		"no stop, no refinement": {strings.Replace(good, `"refined":"b",`, "", 1), "no refined instruction"},
	} {
		if _, _, err := Read(write(c.lines)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", name, err, c.err)
		}
	}
	os.Remove(filepath.Join(dir, "f.jsonl") + ConfigSuffix)
	if _, _, err := Read(filepath.Join(dir, "f.jsonl")); err == nil || !strings.Contains(err.Error(), "no record") {
		t.Errorf("no record: %v", err)
	}
}

// TestLoadJudge: an mlc classifier run judges with its probabilities of the tools (read at
// the tools' indices); a querytype classifier and a bi-encoder run are refused.
func TestLoadJudge(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mlc := filepath.Join(dir, "mlc")
	if err := exporttest.WriteClassifierRun(mlc, exporttest.ClassifierOptions{}, bk, 1); err != nil {
		t.Fatal(err)
	}
	j, kind, err := LoadJudge(mlc, d, bk)
	if err != nil || kind != JudgeMLC {
		t.Fatalf("mlc run: kind %q, %v", kind, err)
	}
	m, err := classifier.LoadRun(mlc, bk)
	if err != nil {
		t.Fatal(err)
	}
	q := d.Queries[0].Text
	want, err := m.Probabilities([]string{q})
	if err != nil {
		t.Fatal(err)
	}
	tools := Tools(d)
	pick := []Tool{tools[5], tools[0], tools[len(tools)-1]}
	for range 2 { // the second from the cache
		got, err := j.Judge(context.Background(), q, pick)
		if err != nil {
			t.Fatal(err)
		}
		for i, tl := range pick {
			if got[i] != want[0][tl.Index] {
				t.Errorf("tool %s: judge %v, classifier %v", tl.ID, got[i], want[0][tl.Index])
			}
		}
	}
	qt := filepath.Join(dir, "qt")
	if err := exporttest.WriteClassifierRun(qt, exporttest.ClassifierOptions{Kind: classifier.KindQueryType}, bk, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadJudge(qt, d, bk); err == nil || !strings.Contains(err.Error(), "querytype classifier") {
		t.Errorf("querytype run: %v", err)
	}
	be := filepath.Join(dir, "be")
	if err := exporttest.WriteRun(be, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadJudge(be, d, bk); err == nil || !strings.Contains(err.Error(), "not an mlc classifier, refiner or cross-encoder run") {
		t.Errorf("bi-encoder run: %v", err)
	}
}

// TestRefinerJudge: a refiner run judges the retrieved tools as its candidate list: the
// softmax of its logits over the tools it scores (its -loss softmax), 0 beyond its N slots.
func TestRefinerJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a refiner")
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	be, ref := filepath.Join(dir, "be"), filepath.Join(dir, "ref")
	if err := exporttest.WriteRecordedRun(be, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 1); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRefinerRun(ref, be, exporttest.RefinerOptions{N: 4}, bk, 1); err != nil {
		t.Fatal(err)
	}
	j, kind, err := LoadJudge(ref, d, bk)
	if err != nil || kind != JudgeRefiner {
		t.Fatalf("refiner run: kind %q, %v", kind, err)
	}
	m, err := refiner.LoadRun(ref, bk)
	if err != nil {
		t.Fatal(err)
	}
	tools := Tools(d)
	pick := []Tool{tools[3], tools[1], tools[7], tools[0], tools[9], tools[2]}
	q := d.Queries[5].Text
	got, err := j.Judge(context.Background(), q, pick)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Scores(context.Background(), []string{q}, [][]int{{3, 1, 7, 0, 9, 2}})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, x := range logits[0] {
		sum += math.Exp(float64(x))
	}
	for i := range pick {
		want := 0.0
		if i < 4 {
			want = math.Exp(float64(logits[0][i])) / sum
		}
		if math.Abs(float64(got[i])-want) > 1e-5 {
			t.Errorf("tool %d: judge %v, softmax of the refiner's logits %v", i, got[i], want)
		}
	}
}
