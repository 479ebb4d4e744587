package export

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/safetensors"
)

// Index file names.
const (
	IndexEmbeddings = "tools.safetensors"       // tensor "embeddings" [n_tools, dim] F32
	IndexTools      = "tools.jsonl"             // one ToolRecord per line, in embedding order
	IndexUsage      = "tools_usage.safetensors" // tensor "embeddings" [n_tools, dim] F32: Tool2Vec usage vectors
	IndexQueryDir   = "query"                   // the query tower in hf layout (a shared tower: both sides)
	IndexToolDir    = "tool"                    // the tool tower of separate towers, in hf layout
	EmbeddingsName  = "embeddings"
	// IndexVersionKey is the tools.safetensors metadata key of the library version an index
	// updated in place (serve) was last compacted at; absent in an index as exported.
	IndexVersionKey = "toolret_library_version"
)

// ToolRecord is one line of tools.jsonl.
type ToolRecord struct {
	ID       string `json:"id"`
	Title    string `json:"title,omitempty"`
	Text     string `json:"text"`
	Category string `json:"category,omitempty"`
	ToolName string `json:"tool_name,omitempty"`
	APIName  string `json:"api_name,omitempty"`
}

// ToolRecords returns the index records of d's tools, in corpus order.
func ToolRecords(d *data.Dataset) []ToolRecord {
	recs := make([]ToolRecord, len(d.Tools))
	for i, t := range d.Tools {
		recs[i] = ToolRecord{ID: t.ID, Title: t.Title, Text: t.Text, Category: t.Category, ToolName: t.ToolName, APIName: t.APIName}
	}
	return recs
}

// UsageManifest describes the Tool2Vec usage vectors of an index (IndexUsage): row i is the
// usage vector of tools.jsonl's tool i as exported (biencoder.UsageVectors over the training
// queries of the run's recorded training part); a tool no training query uses has its text
// vector, the same row as in tools.safetensors.
type UsageManifest struct {
	File string `json:"file"`
	// Split names the training split and TrainQueries counts its judged queries.
	Split        string `json:"split"`
	TrainQueries int    `json:"train_queries"`
	// Fallbacks is the number of tools no training query uses, FallbackIDs their ids.
	Fallbacks   int      `json:"fallbacks"`
	FallbackIDs []string `json:"fallback_ids,omitempty"`
	// ToolsSHA256 is ToolsDigest of the exported tools: the rows align with tools.jsonl only
	// while its ids are these (an index updated since, cmd/export -update or a server's
	// compaction, no longer matches).
	ToolsSHA256 string `json:"tools_sha256"`
}

// ToolsDigest is the sha256 of the tools' ids in order, one per line.
func ToolsDigest(tools []ToolRecord) string {
	h := sha256.New()
	for _, t := range tools {
		h.Write([]byte(t.ID))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeIndex embeds the tools of opts.Data (default dataset if nil) with the tool tower and
// writes them with the towers (writeIndexTowers); with opts.Train, also their usage vectors;
// with opts.Refiner, the refiner (writeRefiner).
func writeIndex(m *Model, root string, man *Manifest, opts Options) error {
	d := opts.Data
	src := opts.DataSource
	if opts.Train != nil && d == nil {
		return fmt.Errorf("export: usage vectors: Options.Train needs Options.Data, the dataset it splits")
	}
	if d == nil {
		var err error
		if d, err = data.Default(); err != nil {
			return err
		}
		src = "default"
	}
	if len(d.Tools) == 0 {
		return fmt.Errorf("export: dataset %s has no tools", d.Name)
	}
	texts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		texts[i] = t.Text
	}
	emb, err := m.Embed(biencoder.ToolTower, texts)
	if err != nil {
		return fmt.Errorf("export: embed tools: %w", err)
	}
	recs := ToolRecords(d)
	sim := m.Similarity
	if sim == "" {
		sim = "dot"
	}
	if err := WriteIndexFiles(root, recs, emb, map[string]string{"similarity": sim, "data_fingerprint": d.Fingerprint()}); err != nil {
		return err
	}
	if opts.Train != nil {
		if man.Usage, err = writeUsage(m, root, d, opts.Train, recs, emb, sim); err != nil {
			return err
		}
	}
	man.FirstStage = FirstStageBiEncoder
	if opts.Refiner != "" {
		if man.Refiner, err = writeRefiner(m, root, man, opts, d, recs); err != nil {
			return err
		}
	}
	if err := writeIndexTowers(m, root, man); err != nil {
		return err
	}
	man.TrainDataFingerprint = m.Fingerprint
	man.DataFingerprint = d.Fingerprint()
	man.DataSource = src
	man.Tools, man.Dim = len(emb), len(emb[0])
	return nil
}

// writeUsage computes the usage vectors of d's tools from the judged queries of train, with
// text the tools' text vectors as the fallback, and writes them to IndexUsage.
func writeUsage(m *Model, root string, d *data.Dataset, train *data.Split, recs []ToolRecord, text [][]float32, sim string) (*UsageManifest, error) {
	qs := train.Judged()
	texts := make([]string, len(qs))
	rel := make([][]int, len(qs))
	for i, q := range qs {
		if q < 0 || q >= len(d.Queries) {
			return nil, fmt.Errorf("export: usage vectors: split %s has query %d, dataset %s has %d", train.Name, q, d.Name, len(d.Queries))
		}
		texts[i], rel[i] = d.Queries[q].Text, train.Relevant[q]
	}
	var qe [][]float32
	if len(qs) > 0 {
		var err error
		if qe, err = m.Embed(biencoder.QueryTower, texts); err != nil {
			return nil, fmt.Errorf("export: usage vectors: embed training queries: %w", err)
		}
	}
	s, err := losses.ParseSimilarity(sim)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	vecs, n, err := biencoder.UsageVectors(qe, rel, text, s == losses.SimCosine)
	if err != nil {
		return nil, fmt.Errorf("export: split %s: %w", train.Name, err)
	}
	u := &UsageManifest{File: IndexUsage, Split: train.Name, TrainQueries: len(qs), Fallbacks: n, ToolsSHA256: ToolsDigest(recs)}
	used := make([]bool, len(recs))
	for _, r := range rel {
		for _, t := range r {
			used[t] = true // in range: UsageVectors checked
		}
	}
	for i, ok := range used {
		if !ok {
			u.FallbackIDs = append(u.FallbackIDs, recs[i].ID)
		}
	}
	meta := map[string]string{"similarity": sim, "data_fingerprint": d.Fingerprint(), "split": train.Name,
		"train_queries": strconv.Itoa(len(qs)), "fallbacks": strconv.Itoa(n), "tools_sha256": u.ToolsSHA256}
	if err := writeMatrix(filepath.Join(root, IndexUsage), vecs, meta); err != nil {
		return nil, err
	}
	return u, nil
}

// ReadUsage reads the usage vectors of the index in dir that man describes: flat [n*dim],
// row i for tools[i]. tools must be the index's tools as exported (ToolsDigest), dim their
// text vectors' dimension.
func ReadUsage(dir string, man *Manifest, tools []ToolRecord, dim int) ([]float32, error) {
	u := man.Usage
	if u == nil {
		return nil, fmt.Errorf("index %s has no usage vectors (exported from a run without run.json, or over other data than the run's)", dir)
	}
	if got := ToolsDigest(tools); got != u.ToolsSHA256 {
		return nil, fmt.Errorf("index %s: its tools changed since its usage vectors were computed (updated with cmd/export -update or a server's live updates): re-export it with cmd/export -format index -run RUN", dir)
	}
	p, err := path(dir, u.File)
	if err != nil {
		return nil, fmt.Errorf("index %s: manifest: %w", dir, err)
	}
	f, err := safetensors.Open(p)
	if err != nil {
		return nil, err
	}
	flat, shape, err := f.Float32(EmbeddingsName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(shape) != 2 || shape[0] != len(tools) || shape[1] != dim {
		return nil, fmt.Errorf("%s: usage vectors shape %v, want [%d, %d] (the index's tools and dimension)", p, shape, len(tools), dim)
	}
	return flat, nil
}

// writeIndexTowers writes the towers a server needs: the query tower to embed queries and the
// tool tower to embed tools added later (cmd/serve's live updates). A shared tower is written
// once, in query/, with both lengths (as -format hf writes it: max_seq_length is the tool
// length, the query length is recorded in config_sentence_transformers.json and read back by
// LoadHF); separate towers go to query/ and tool/.
func writeIndexTowers(m *Model, root string, man *Manifest) error {
	sides := []struct {
		name, rel string
		maxLen    int
	}{{biencoder.QueryTower, IndexQueryDir, m.QueryMaxLen}, {biencoder.ToolTower, IndexToolDir, m.ToolMaxLen}}
	man.Towers = map[string]string{}
	for _, s := range sides {
		if len(m.Towers) == 1 && s.name == biencoder.ToolTower {
			man.Towers[s.name] = IndexQueryDir // the shared tower, written once with both lengths
			continue
		}
		t, err := m.Tower(s.name)
		if err != nil {
			return err
		}
		wt := *t
		if len(m.Towers) == 2 && s.maxLen > 0 {
			wt.MaxLen = min(wt.MaxLen, s.maxLen)
		}
		dir, err := path(root, s.rel)
		if err != nil {
			return err
		}
		if err := writeTowerHF(m, &wt, dir, wt.MaxLen); err != nil {
			return err
		}
		man.Towers[s.name] = s.rel
	}
	return nil
}

// WriteIndexFiles writes tools.safetensors and tools.jsonl into dir: one record and one
// embedding row per tool, in the same order.
func WriteIndexFiles(dir string, tools []ToolRecord, emb [][]float32, metadata map[string]string) error {
	return WriteIndexFilesBias(dir, tools, emb, nil, metadata)
}

// WriteIndexFilesBias is WriteIndexFiles plus, when bias is not nil, the per-tool bias of an
// MLC index (one value per tool, same order) as the tensor IndexBias [n_tools] of
// tools.safetensors. With a nil bias it writes what WriteIndexFiles writes, byte for byte.
func WriteIndexFilesBias(dir string, tools []ToolRecord, emb [][]float32, bias []float32, metadata map[string]string) error {
	if len(tools) != len(emb) || len(emb) == 0 {
		return fmt.Errorf("export: %d tools for %d embeddings", len(tools), len(emb))
	}
	var extra []safetensors.Tensor
	if bias != nil {
		if len(bias) != len(tools) {
			return fmt.Errorf("export: %d tools for %d biases", len(tools), len(bias))
		}
		extra = append(extra, safetensors.Tensor{Name: IndexBias, Shape: []int{len(bias)}, Data: bias})
	}
	if err := writeMatrix(filepath.Join(dir, IndexEmbeddings), emb, metadata, extra...); err != nil {
		return err
	}
	if err := jsonfile.WriteLines(filepath.Join(dir, IndexTools), tools); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// writeMatrix writes rows as the tensor EmbeddingsName [len(rows), dim] of a safetensors file,
// with the extra tensors beside it.
func writeMatrix(p string, rows [][]float32, metadata map[string]string, extra ...safetensors.Tensor) error {
	dim := len(rows[0])
	flat := make([]float32, 0, len(rows)*dim)
	for i, e := range rows {
		if len(e) != dim {
			return fmt.Errorf("export: embedding %d has %d dimensions, want %d", i, len(e), dim)
		}
		flat = append(flat, e...)
	}
	ts := append([]safetensors.Tensor{{Name: EmbeddingsName, Shape: []int{len(rows), dim}, Data: flat}}, extra...)
	if err := safetensors.Write(p, ts, metadata); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// ReadIndexFiles reads tools.jsonl and tools.safetensors of an index directory: the records
// and the flat embeddings [n*dim] with dim.
func ReadIndexFiles(dir string) ([]ToolRecord, []float32, int, map[string]string, error) {
	sp := filepath.Join(dir, IndexEmbeddings)
	f, err := safetensors.Open(sp)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	flat, shape, err := f.Float32(EmbeddingsName)
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("%s: %w", sp, err)
	}
	if len(shape) != 2 || shape[0] == 0 || shape[1] == 0 {
		return nil, nil, 0, nil, fmt.Errorf("%s: embeddings shape %v, want [n_tools, dim]", sp, shape)
	}
	jp := filepath.Join(dir, IndexTools)
	jf, err := os.Open(jp)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	defer jf.Close()
	var recs []ToolRecord
	sc := bufio.NewScanner(jf)
	sc.Buffer(make([]byte, 1<<16), 1<<26)
	for n := 1; sc.Scan(); n++ {
		var r ToolRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, 0, nil, fmt.Errorf("%s:%d: %w", jp, n, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, 0, nil, fmt.Errorf("%s: %w", jp, err)
	}
	if len(recs) != shape[0] {
		return nil, nil, 0, nil, fmt.Errorf("index %s: %d tools in %s but %d embeddings in %s", dir, len(recs), IndexTools, shape[0], IndexEmbeddings)
	}
	return recs, flat, shape[1], f.Metadata, nil
}
