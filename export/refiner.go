package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
)

// Index refiner files.
const (
	IndexRefinerDir = "refiner"       // the refiner packaged with an index: a checkpoint directory
	RefinerToolIDs  = "tool_ids.json" // in IndexRefinerDir: the ids of its tool-vector rows, in order
	refinerState    = "state.json"    // checkpoints' manifest file
	refinerVars     = "variables.safetensors"
)

// RefinerManifest describes the ToolRefiner packaged with an index (cmd/export -format index
// -refiner RUN): IndexRefinerDir is a checkpoint directory refiner.LoadRun reads (the run's
// best checkpoint without its optimizer state: variables, refiner.json, tokenizer, state.json)
// plus RefinerToolIDs, the tool ids of the rows of its Tool2Vec table.
type RefinerManifest struct {
	Dir string `json:"dir"`
	// Source is the refiner checkpoint packaged.
	Source string `json:"source"`
	// Candidates is the first stage the refiner re-orders: "bi-encoder" (the index's text
	// vectors) or "usage" (its usage vectors); N is the number of slots.
	Candidates string `json:"candidates"`
	N          int    `json:"n"`
	// Tools is the number of rows of its tool table and ToolsSHA256 the digest of their ids
	// (ToolIDsDigest); both describe RefinerToolIDs.
	Tools       int    `json:"tools"`
	ToolsSHA256 string `json:"tools_sha256"`
}

// ToolIDsDigest is the sha256 of ids in order, one per line (ToolsDigest of records with
// these ids).
func ToolIDsDigest(ids []string) string {
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadRefinerToolIDs reads the tool ids of a packaged refiner directory (RefinerToolIDs): one
// unique, non-empty id per row of its tool table.
func ReadRefinerToolIDs(dir string) ([]string, error) {
	p := filepath.Join(dir, RefinerToolIDs)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if id == "" || seen[id] {
			return nil, fmt.Errorf("%s: row %d: empty or repeated tool id %q", p, i, id)
		}
		seen[id] = true
	}
	return ids, nil
}

// SameRun reports whether paths a and b (run directories or checkpoints of runs) name the
// same run directory; known is false when either cannot be found.
func SameRun(a, b string) (same, known bool) {
	fa, errA := os.Stat(rundir.RunOf(a))
	fb, errB := os.Stat(rundir.RunOf(b))
	if errA != nil || errB != nil {
		return false, false
	}
	return os.SameFile(fa, fb), true
}

// writeRefiner packages the refiner checkpoint opts.Refiner into root/IndexRefinerDir for the
// index of m over d's tools recs (written by writeIndex or writeMLCIndex, with usage vectors
// described by man.Usage when it has them, and man.FirstStage set). The refiner must re-order
// the candidates of the exported run itself (a bi-encoder's text vectors, or its usage vectors
// from the same training part; an MLC classifier's scores) over d, the data it was trained on.
func writeRefiner(m *Model, root string, man *Manifest, opts Options, d *data.Dataset, recs []ToolRecord) (*RefinerManifest, error) {
	src := opts.Refiner
	c, cb, _, err := rundir.LoadCheckpoint(src, refiner.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("export: refiner: %w", err)
	}
	cfg, err := refiner.Unmarshal(cb)
	if err != nil {
		return nil, fmt.Errorf("export: refiner %s: %w", c.Dir, err)
	}
	// The first-stage weight the run chose on dev goes into the packaged config.
	if err := refiner.ApplyWeight(cfg, src); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	kind := cfg.Candidates.Kind
	if err := RefinerFits(kind, man.Stage()); err != nil {
		return nil, fmt.Errorf("export: refiner %s re-orders %s candidates (first stage %s), the index is %s's: %w", src, kind, cfg.Candidates, m.Source, err)
	}
	if same, known := SameRun(cfg.Candidates.Run, m.Source); !same {
		why := "another run"
		if !known {
			why = "a run not found here"
		}
		return nil, fmt.Errorf("export: refiner %s re-orders the candidates of %s, %s: export it with -run %s", src, cfg.Candidates.Run, why, cfg.Candidates.Run)
	}
	meta, err := rundir.Read(rundir.RunOf(src))
	if err != nil {
		return nil, fmt.Errorf("export: refiner: %w", err)
	}
	if err := meta.CheckData(d); err != nil {
		return nil, fmt.Errorf("export: refiner %s: its tool table is in the order of its training data; index it over that data (-data): %w", src, err)
	}
	if cfg.Tools != len(recs) {
		return nil, fmt.Errorf("export: refiner %s has %d tool vectors, the indexed data %d tools", src, cfg.Tools, len(recs))
	}
	if kind == "usage" {
		if man.Usage == nil || opts.Train == nil {
			return nil, fmt.Errorf("export: refiner %s re-orders usage-vector candidates, and the index has no usage vectors (the run needs its run.json and -data its training data)", src)
		}
		rtrain, _, err := meta.Split.Apply(d)
		if err != nil {
			return nil, fmt.Errorf("export: refiner %s: %w", src, err)
		}
		if !slices.Equal(rtrain.Judged(), opts.Train.Judged()) {
			return nil, fmt.Errorf("export: refiner %s was trained over usage vectors of another training part (%d queries) than the index's (%d): their dev splits differ", src, len(rtrain.Judged()), len(opts.Train.Judged()))
		}
	}
	dir, err := path(root, IndexRefinerDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	// The model's variables without the optimizer's state.
	vars, err := safetensors.Open(filepath.Join(c.Dir, refinerVars))
	if err != nil {
		return nil, fmt.Errorf("export: refiner: %w", err)
	}
	var raws []safetensors.Raw
	for _, name := range vars.Names() {
		if strings.HasPrefix(name, "/optimizer/") {
			continue
		}
		b, info, err := vars.Raw(name)
		if err != nil {
			return nil, fmt.Errorf("export: refiner %s: %w", c.Dir, err)
		}
		raws = append(raws, safetensors.Raw{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	if err := safetensors.WriteRaw(filepath.Join(dir, refinerVars), raws, map[string]string{"format": "toolret"}); err != nil {
		return nil, fmt.Errorf("export: refiner: %w", err)
	}
	st := checkpoints.Manifest{Step: c.Manifest.Step, Epoch: c.Manifest.Epoch, Seed: c.Manifest.Seed,
		Fingerprint: c.Manifest.Fingerprint, Metrics: c.Manifest.Metrics, Files: map[string]string{}}
	for name := range c.Manifest.Files {
		if name == refinerVars {
			continue
		}
		b, err := c.File(name)
		if err != nil {
			return nil, fmt.Errorf("export: refiner: %w", err)
		}
		if name == refiner.ConfigFile {
			b = cfg.Marshal()
		}
		if err := writeFile(dir, name, b); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Manifest.Files)) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		sum := sha256.Sum256(b)
		st.Files[name] = hex.EncodeToString(sum[:])
	}
	if err := writeJSON(dir, refinerState, st); err != nil {
		return nil, err
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	if err := writeJSON(dir, RefinerToolIDs, ids); err != nil {
		return nil, err
	}
	// What the retriever will load must load.
	if _, err := refiner.LoadRun(dir, m.Backend); err != nil {
		return nil, fmt.Errorf("export: packaged refiner: %w", err)
	}
	return &RefinerManifest{Dir: IndexRefinerDir, Source: c.Dir, Candidates: kind, N: cfg.N, Tools: len(ids), ToolsSHA256: ToolIDsDigest(ids)}, nil
}

// refinerStages maps a refiner's candidate source to the index first stage it can re-order.
var refinerStages = map[string]string{"bi-encoder": FirstStageBiEncoder, "usage": FirstStageBiEncoder, "mlc": FirstStageMLC}

// RefinerFits reports why a refiner over candidates of kind (refiner.Config.Candidates.Kind)
// cannot re-order the candidates of an index whose first stage is stage (Manifest.Stage): a
// refiner over bi-encoder or usage candidates needs a bi-encoder's index, one over mlc
// candidates an MLC classifier's; bm25 candidates are not an index's.
func RefinerFits(kind, stage string) error {
	want, ok := refinerStages[kind]
	switch {
	case !ok:
		return fmt.Errorf("an index serves a bi-encoder's text or usage vectors or an MLC classifier's scores (refiners over -candidates bi-encoder, usage or mlc), not %s candidates", kind)
	case want != stage:
		return fmt.Errorf("a refiner over %s candidates needs an index of %s (cmd/export -format index -run of its candidates run), this index's first stage is %s", kind, stageNames[want], stageNames[stage])
	}
	return nil
}

var stageNames = map[string]string{FirstStageBiEncoder: "a bi-encoder", FirstStageMLC: "an MLC classifier"}

// RefinerDir returns the directory of the refiner packaged with the index in dir.
func (m *Manifest) RefinerDir(dir string) (string, error) {
	if m.Refiner == nil {
		return "", fmt.Errorf("index %s has no refiner", dir)
	}
	p, err := path(dir, m.Refiner.Dir)
	if err != nil {
		return "", fmt.Errorf("index %s: manifest: %w", dir, err)
	}
	return p, nil
}
