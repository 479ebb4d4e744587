package exportcmd

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/toolindex"
)

// TestIndexUsageVectors exports the index of a run that records its dev split: the index
// holds usage vectors equal to those evaluation computes from the run's training part
// (biencoder RetrieverFrom, as eval -method rerank -tool-vectors usage does), fallback tools
// have their text rows, toolindex.Load scores by them with WithToolVectors("usage"), tools
// added later are scored by their text vectors, and an index whose tools changed since the
// export refuses them.
func TestIndexUsageVectors(t *testing.T) {
	tmp := t.TempDir()
	be, run := testRun(t, tmp)
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sp, trainPart, _, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(run, &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	// A copy of the default dataset, edited at the end.
	ddir := filepath.Join(tmp, "data")
	if err := os.CopyFS(ddir, os.DirFS("../../data/default")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "index")
	man, err := runExport(run, "index", out, false, ddir, "go")
	if err != nil {
		t.Fatal(err)
	}

	// Reference: what evaluation computes for the run's training part.
	emb, err := biencoder.LoadRun(run, be)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := emb.RetrieverFrom(d, biencoder.VectorsUsage, trainPart)
	if err != nil {
		t.Fatal(err)
	}
	text, err := emb.RetrieverFrom(d, biencoder.VectorsText, nil)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, q := range trainPart.Judged() {
		for _, tl := range trainPart.Relevant[q] {
			used[tl] = true
		}
	}
	var fallbackIDs []string
	for i, tl := range d.Tools {
		if !used[i] {
			fallbackIDs = append(fallbackIDs, tl.ID)
		}
	}
	u := man.Usage
	switch {
	case u == nil:
		t.Fatal("index exported from a run with run.json has no usage vectors")
	case len(fallbackIDs) == 0:
		t.Fatal("test data: every tool has a training query, the fallback is not exercised")
	case u.File != export.IndexUsage || u.TrainQueries != len(trainPart.Judged()) || u.Fallbacks != len(fallbackIDs) ||
		!slices.Equal(u.FallbackIDs, fallbackIDs) || ref.Fallbacks != len(fallbackIDs):
		t.Fatalf("manifest usage %+v (retriever fallbacks %d); want %d training queries, fallbacks %v", u, ref.Fallbacks, len(trainPart.Judged()), fallbackIDs)
	}
	if _, ok := man.Files[export.IndexUsage]; !ok {
		t.Errorf("manifest files lack %s", export.IndexUsage)
	}
	got := readMatrix(t, filepath.Join(out, export.IndexUsage))
	textRows := readMatrix(t, filepath.Join(out, export.IndexEmbeddings))
	if len(got) != len(d.Tools) {
		t.Fatalf("%d usage rows for %d tools", len(got), len(d.Tools))
	}
	for i := range got {
		if diff := maxDiff(got[i], ref.Tools[i]); diff > 1e-5 {
			t.Fatalf("tool %s: exported usage vector differs from evaluation's by %g", d.Tools[i].ID, diff)
		}
		if !used[i] && !slices.Equal(got[i], textRows[i]) {
			t.Fatalf("fallback tool %s: usage row is not its text row", d.Tools[i].ID)
		}
		if used[i] && maxDiff(got[i], textRows[i]) < 1e-3 {
			t.Fatalf("tool %s has training queries but its usage row is its text row", d.Tools[i].ID)
		}
		if diff := maxDiff(textRows[i], text.Tools[i]); diff > 1e-5 {
			t.Fatalf("tool %s: text row differs from evaluation's by %g", d.Tools[i].ID, diff)
		}
	}

	// toolindex.Load with usage vectors ranks by them, as evaluation does.
	r, err := toolindex.Load(out, toolindex.WithBackend(be), toolindex.WithToolVectors("usage"))
	if err != nil {
		t.Fatal(err)
	}
	if r.ToolVectors() != "usage" || r.UsageNote() != biencoder.UsageNote(len(fallbackIDs), len(d.Tools)) {
		t.Fatalf("tool vectors %q, note %q", r.ToolVectors(), r.UsageNote())
	}
	lib := r.Library()
	for i := range got {
		if !slices.Equal(lib.Vector(i), got[i]) || !slices.Equal(lib.Embedding(i), textRows[i]) {
			t.Fatalf("library row %d: Vector is not the usage row or Embedding not the text row", i)
		}
	}
	queries := []string{d.Queries[0].Text, d.Queries[len(d.Queries)-1].Text}
	want, err := ref.RankTexts(queries, 5)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.RetrieveBatch(context.Background(), queries, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res {
		for j, x := range res[i] {
			if w := want[i].Tools[j]; x.Index != w && math.Abs(float64(x.Score-want[i].Scores[j])) > 1e-5 {
				t.Fatalf("query %d rank %d: tool %d (%v), evaluation ranks %d (%v)", i, j, x.Index, x.Score, w, want[i].Scores[j])
			}
		}
	}
	// A tool added later is scored by its text vector: a tool whose text is the query
	// comes first with cosine 1.
	q := "book a table for two at an italian restaurant tonight"
	e, err := r.Embed(biencoder.ToolTower, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	next, err := lib.With(lib.Version+1, []export.ToolRecord{{ID: "new-tool", Text: q}}, e, []string{d.Tools[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	n := next.Len() - 1
	if next.Tool(n).ID != "new-tool" || !slices.Equal(next.Vector(n), e[0]) || !slices.Equal(next.Embedding(n), e[0]) {
		t.Fatal("new tool: not scored by its text vector")
	}
	for i := 0; i < n; i++ { // the others keep their usage vectors (tool 0 deleted)
		if !slices.Equal(next.Vector(i), got[i+1]) {
			t.Fatalf("library update: tool %s lost its usage vector", next.Tool(i).ID)
		}
	}
	if err := r.SetLibrary(next); err != nil {
		t.Fatal(err)
	}
	top, err := r.Retrieve(context.Background(), q, 1)
	if err != nil || top[0].ToolID != "new-tool" || top[0].Score < 0.9999 {
		t.Fatalf("after adding the tool: %+v, %v", top, err)
	}

	// Text vectors stay the default; an index without usage vectors refuses them.
	rt, err := toolindex.Load(out, toolindex.WithBackend(be))
	if err != nil || rt.ToolVectors() != "text" || !slices.Equal(rt.Library().Vector(3), textRows[3]) || rt.UsageNote() != "" {
		t.Fatalf("default load: %v", err)
	}
	if err := exporttest.WriteRun(filepath.Join(tmp, "old"), exporttest.Options{}, be, 9); err != nil {
		t.Fatal(err)
	}
	other := *d
	other.Tools = slices.Clone(other.Tools)
	other.Tools[0].Text += " (edited)" // another fingerprint
	for _, tc := range []struct {
		name, run string
		d         *data.Dataset
		note      string
	}{
		{"no run.json", filepath.Join(tmp, "old"), d, "has no run.json"},
		{"other data", run, &other, "not the run's training data"},
	} {
		split, note, err := rundir.TrainingPart(tc.run, tc.d)
		if err != nil || split != nil || !strings.Contains(note, tc.note) {
			t.Errorf("%s: split %v, note %q, err %v; want note %q", tc.name, split != nil, note, err, tc.note)
		}
	}
	old := filepath.Join(tmp, "old-index")
	if _, err := runExport(filepath.Join(tmp, "old"), "index", old, false, "", "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(old, toolindex.WithBackend(be), toolindex.WithToolVectors("usage")); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("usage vectors of an index without them: %v", err)
	}
	if _, err := toolindex.Load(out, toolindex.WithToolVectors("tool2vec")); err == nil || !strings.Contains(err.Error(), `"tool2vec"`) {
		t.Errorf("unknown tool vectors: %v", err)
	}
	// A checkpoint directory of the run finds the run's split too.
	ck, err := rundir.CheckpointDir(run)
	if err != nil {
		t.Fatal(err)
	}
	if split, note, err := rundir.TrainingPart(ck, d); err != nil || split == nil || len(split.Judged()) != len(trainPart.Judged()) {
		t.Errorf("checkpoint directory %s: split %v, note %q, %v", ck, split != nil, note, err)
	}

	// The index's tools change (export -update: one tool removed): usage vectors refused.
	corpus := filepath.Join(ddir, "corpus.jsonl")
	b, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	changed := strings.Replace(lines[0], `"text": "`, `"text": "Changed: `, 1)
	changed = strings.Replace(changed, `"text":"`, `"text":"Changed: `, 1)
	if changed == lines[0] {
		t.Fatalf("cannot edit corpus line %q", lines[0])
	}
	lines[0] = changed
	if err := os.WriteFile(corpus, []byte(strings.Join(lines, "")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	added := `{"_id": "usage-test-new", "title": "new", "text": "a new tool"}` + "\n"
	f, err := os.OpenFile(corpus, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(added)
	f.Close()
	if _, err := runUpdate("", "index", out, false, ddir, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(out, toolindex.WithBackend(be), toolindex.WithToolVectors("usage")); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("usage vectors after the index's tools changed: %v", err)
	}
	if _, err := toolindex.Load(out, toolindex.WithBackend(be)); err != nil {
		t.Errorf("text vectors after the update: %v", err)
	}
}

func readMatrix(t *testing.T, p string) [][]float32 {
	t.Helper()
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	flat, shape, err := f.Float32(export.EmbeddingsName)
	if err != nil || len(shape) != 2 {
		t.Fatalf("%s: %v %v", p, shape, err)
	}
	out := make([][]float32, shape[0])
	for i := range out {
		out[i] = flat[i*shape[1] : (i+1)*shape[1]]
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}
