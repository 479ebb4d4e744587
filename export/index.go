package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/safetensors"
)

// Index file names.
const (
	IndexEmbeddings = "tools.safetensors" // tensor "embeddings" [n_tools, dim] F32
	IndexTools      = "tools.jsonl"       // one ToolRecord per line, in embedding order
	IndexQueryDir   = "query"             // the query tower in hf layout (a shared tower: both sides)
	IndexToolDir    = "tool"              // the tool tower of separate towers, in hf layout
	EmbeddingsName  = "embeddings"
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

// writeIndex embeds the tools of opts.Data (default dataset if nil) with the tool tower and
// writes them with the towers (writeIndexTowers).
func writeIndex(m *Model, root string, man *Manifest, opts Options) error {
	d := opts.Data
	src := opts.DataSource
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
	if err := writeIndexTowers(m, root, man); err != nil {
		return err
	}
	man.TrainDataFingerprint = m.Fingerprint
	man.DataFingerprint = d.Fingerprint()
	man.DataSource = src
	man.Tools, man.Dim = len(emb), len(emb[0])
	return nil
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
	if len(tools) != len(emb) || len(emb) == 0 {
		return fmt.Errorf("export: %d tools for %d embeddings", len(tools), len(emb))
	}
	dim := len(emb[0])
	flat := make([]float32, 0, len(emb)*dim)
	for i, e := range emb {
		if len(e) != dim {
			return fmt.Errorf("export: embedding %d has %d dimensions, want %d", i, len(e), dim)
		}
		flat = append(flat, e...)
	}
	if err := safetensors.Write(filepath.Join(dir, IndexEmbeddings), []safetensors.Tensor{{Name: EmbeddingsName, Shape: []int{len(emb), dim}, Data: flat}}, metadata); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	p := filepath.Join(dir, IndexTools)
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range tools {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("export: %s: %w", p, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("export: %s: %w", p, err)
	}
	return f.Close()
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
