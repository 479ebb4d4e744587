package traincmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/rundir"
)

// TestColt trains a tiny bi-encoder with a non-default dev split (-dev 0.5 -seed 7), COLT's
// graph stage on it through the command line, and checks that COLT recorded and used exactly
// the stage-1 dev split, its run files, that a corrupt embedding cache is recomputed, and the
// input errors: every numeric flag, the removed flags, a retriever without run.json or of
// another kind, and resuming with a changed flag.
func TestColt(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	if err := biencoderCmd([]string{"-run", be, "-layers", "1", "-hidden", "32", "-heads", "2", "-batch", "32", "-epochs", "1",
		"-vocab-size", "1500", "-test", "", "-dev", "0.5", "-seed", "7", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	stage1, err := rundir.Read(be)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "colt")
	if err := coltCmd([]string{"-first-stage", be, "-run", run, "-epochs", "2", "-batch", "256", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	var cm map[string]json.RawMessage
	b, _ := os.ReadFile(filepath.Join(run, "test_metrics.json"))
	if err := json.Unmarshal(b, &cm); err != nil || cm["stage-1 bi-encoder"] == nil || cm["+ COLT"] == nil || cm["seconds_per_epoch"] == nil {
		t.Errorf("colt test metrics %.200s: %v", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(run, "checkpoints", "*", "colt.json")); len(m) == 0 {
		t.Errorf("colt checkpoints lack colt.json")
	}
	m, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != "colt" || m.Parent != be || m.Args["first-stage"] != be || m.Split.Seed != 7 || m.Split.DevFraction != 0.5 ||
		!slices.Equal(m.Split.DevIDs, stage1.Split.DevIDs) {
		t.Errorf("colt recorded kind %s, parent %s, args %v, split (dev %v, seed %d, %d ids): not stage 1's", m.Kind, m.Parent, m.Args, m.Split.DevFraction, m.Split.Seed, len(m.Split.DevIDs))
	}
	// The dev metrics are over the stage-1 dev split: its queries, not a carve of COLT's own.
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, wantDev, err := d.CarveDev("train", 0.5, 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, dev, _, err := rundir.Splits(run, d); err != nil || !slices.Equal(dev.Queries, wantDev.Queries) {
		t.Errorf("colt dev split is not stage 1's (%v)", err)
	}

	// A corrupt embedding cache is reported and recomputed.
	cache := colt.EmbeddingCache(be, d)
	if _, _, err := colt.ReadEmbeddingCache(cache, d); err != nil {
		t.Fatalf("cache after the first run: %v", err)
	}
	if err := os.WriteFile(cache, []byte("\x10\x00\x00\x00\x00\x00\x00\x00{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := colt.ReadEmbeddingCache(cache, d); err == nil || !strings.Contains(err.Error(), cache) {
		t.Errorf("corrupt cache: error %v, want one naming %s", err, cache)
	}
	if err := coltCmd([]string{"-first-stage", be, "-run", filepath.Join(dir, "colt2"), "-epochs", "1", "-batch", "512", "-quiet"}); err != nil {
		t.Fatalf("colt over a corrupt cache: %v", err)
	}
	if _, _, err := colt.ReadEmbeddingCache(cache, d); err != nil {
		t.Errorf("cache not rewritten: %v", err)
	}

	old := filepath.Join(dir, "old")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-first-stage"},
		{[]string{"-first-stage", filepath.Join(dir, "nope")}, "nope"},
		{[]string{"-first-stage", old}, "migrate"},
		{[]string{"-first-stage", run}, "not a bi-encoder run"},
		{[]string{"-first-stage", be, "-views", "all"}, "-views"},
		{[]string{"-first-stage", be, "-batch", "0"}, "-batch"},
		{[]string{"-first-stage", be, "-epochs", "0"}, "-epochs"},
		{[]string{"-first-stage", be, "-layers", "-1"}, "-layers"},
		{[]string{"-first-stage", be, "-list-len", "1"}, "-list-len"},
		{[]string{"-first-stage", be, "-lr", "0"}, "-lr"},
		{[]string{"-first-stage", be, "-temperature", "0"}, "-temperature"},
		{[]string{"-first-stage", be, "-edge-dropout", "1"}, "-edge-dropout"},
		{[]string{"-first-stage", be, "-edge-dropout", "-0.1"}, "-edge-dropout"},
		{[]string{"-first-stage", be, "-attach-temp", "0"}, "-attach-temp"},
		{[]string{"-first-stage", be, "-lambda", "-1"}, "-lambda"},
		{[]string{"-first-stage", be, "-weight-decay", "-1"}, "-weight-decay"},
		{[]string{"-first-stage", be, "-patience", "-1"}, "-patience"},
		{[]string{"-first-stage", be, "-metric", "mrr"}, "-metric"},
		{[]string{"-first-stage", be, "-split-seed", "1"}, "-split-seed"},
		{[]string{"-first-stage", be, "-dev", "0.1"}, "-dev"},
		{[]string{"-first-stage", be, "-tau", "0.1"}, "-tau"},
		{[]string{"-init-embeddings", be}, "-init-embeddings"},
	} {
		args := append(c.args, "-run", filepath.Join(dir, "bad", strings.Repeat("x", i+1)), "-quiet")
		if err := coltCmd(args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("colt %v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
	// Resuming with a changed flag is refused, naming it; a new run into a run is refused.
	if err := coltCmd([]string{"-run", run, "-resume", "-lr", "0.1", "-quiet"}); err == nil || !strings.Contains(err.Error(), "lr 0.1 != recorded") {
		t.Errorf("resume with a changed -lr: %v", err)
	}
	if err := coltCmd([]string{"-first-stage", be, "-run", run, "-quiet"}); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("a new run into an existing one: %v", err)
	}
}
