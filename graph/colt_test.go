package graph

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/sharedtest"

	"github.com/toolret/toolret/data"
)

// toolLens loads ../shared/datasets/toollens relative to the repository root, skipping the
// test when it is absent.
func toolLens(t *testing.T) *data.Dataset {
	t.Helper()
	path := sharedtest.Dir(t, filepath.Join("datasets", "toollens"))
	d, err := data.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFromSplitToolLens(t *testing.T) {
	d := toolLens(t)
	train, err := d.Split("train")
	if err != nil {
		t.Fatal(err)
	}
	test, err := d.Split("test")
	if err != nil {
		t.Fatal(err)
	}
	g, err := FromSplit(d, train)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(train.Pairs()); g.QueryTool.NumEdges() != want {
		t.Errorf("query-tool edges %d, want the %d training pairs", g.QueryTool.NumEdges(), want)
	}
	inTrain := map[int]bool{}
	for _, q := range train.Queries {
		inTrain[q] = true
	}
	trainScenes := map[int]bool{}
	for _, q := range g.QueryScene.Left {
		if !inTrain[int(q)] {
			t.Fatalf("query-scene graph has non-training query %d", q)
		}
	}
	for _, q := range g.QueryTool.Left {
		if !inTrain[int(q)] {
			t.Fatalf("query-tool graph has non-training query %d", q)
		}
	}
	for e, s := range g.QueryScene.Right {
		if train.Scene[int(g.QueryScene.Left[e])] != int(s) {
			t.Fatalf("query-scene edge %d does not match the split's scene", e)
		}
		trainScenes[int(s)] = true
	}
	for _, s := range g.SceneTool.Left {
		if !trainScenes[int(s)] {
			t.Fatalf("scene-tool graph has scene %d of no training query", s)
		}
	}
	// Scene-tool rows are means: each scene's weights sum to 1.
	sum := map[int32]float64{}
	for e, s := range g.SceneTool.Left {
		sum[s] += float64(g.SceneTool.Weight[e])
	}
	for s, w := range sum {
		if w < 0.9999 || w > 1.0001 {
			t.Fatalf("scene %d weights sum to %g", s, w)
		}
	}
	testOnly := 0
	for _, q := range test.Queries {
		if !inTrain[q] {
			testOnly++
		}
	}
	t.Logf("ToolLens train graphs: Q-T %d edges, Q-S %d edges, S-T %d edges over %d of %d scenes; %d test-only queries have no edges",
		g.QueryTool.NumEdges(), g.QueryScene.NumEdges(), g.SceneTool.NumEdges(), len(sum), len(d.Scenes), testOnly)
}

// TestFromSplitMissingScene: a judged training query without a scene is an error naming it,
// not a query silently left out of the scene graph.
func TestFromSplitMissingScene(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	src := d.Splits["train"]
	q := src.Judged()[0]
	sc := map[int]int{}
	for k, v := range src.Scene {
		if k != q {
			sc[k] = v
		}
	}
	broken := &data.Split{Name: "train", Queries: src.Queries, Relevant: src.Relevant, Scene: sc}
	if _, err := FromSplit(d, broken); err == nil || !strings.Contains(err.Error(), d.Queries[q].ID) || !strings.Contains(err.Error(), "has no scene") {
		t.Fatalf("want an error naming query %s, got %v", d.Queries[q].ID, err)
	}
	if _, err := FromSplit(d, src); err != nil {
		t.Fatal(err)
	}
}
