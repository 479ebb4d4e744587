package data

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Load reads a dataset from path: a BEIR directory (corpus.jsonl, queries.jsonl,
// qrels/<split>.tsv, optional query_scene_<split>.txt and scene_tool.txt) or a Parquet
// directory (tools.parquet, queries.parquet, qrels_<split>.parquet, ...). Either may hold
// HoldoutFile: the dataset is then a held-out-tool view (written from HoldoutTools). A .jsonl
// file is a tool library (LoadLibrary): tools and no queries.
func Load(p string) (*Dataset, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	if !st.IsDir() {
		if st.Mode().IsRegular() && strings.HasSuffix(p, ".jsonl") {
			return LoadLibrary(p)
		}
		return nil, fmt.Errorf("dataset %s: not a directory (nor a tool library .jsonl file)", p)
	}
	name := filepath.Base(filepath.Clean(p))
	if _, err := os.Stat(filepath.Join(p, "tools.parquet")); err == nil {
		d, err := LoadParquet(p)
		if err != nil {
			return nil, err
		}
		return loadHoldout(p, d)
	}
	return LoadFS(os.DirFS(p), ".", name)
}

// LoadFS reads a BEIR-layout dataset from directory dir of fsys (for example an embed.FS).
func LoadFS(fsys fs.FS, dir, name string) (*Dataset, error) {
	b := newBuilder(name)
	if err := readJSONL(fsys, path.Join(dir, "corpus.jsonl"), b.addTool); err != nil {
		return nil, err
	}
	if err := readJSONL(fsys, path.Join(dir, "queries.jsonl"), b.addQuery); err != nil {
		return nil, err
	}
	qrelDir := path.Join(dir, "qrels")
	entries, err := fs.ReadDir(fsys, qrelDir)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: qrels directory: %w", name, err)
	}
	var splits []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".tsv") {
			splits = append(splits, strings.TrimSuffix(e.Name(), ".tsv"))
		}
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("dataset %s: no qrels/<split>.tsv files in %s", name, qrelDir)
	}
	sort.Strings(splits)
	for _, s := range splits {
		f := path.Join(qrelDir, s+".tsv")
		b.split(s)
		if err := readLines(fsys, f, func(line int, text string) error { return b.addQrel(s, f, line, text) }); err != nil {
			return nil, err
		}
	}
	sceneFile := path.Join(dir, "scene_tool.txt")
	if _, err := fs.Stat(fsys, sceneFile); err == nil {
		if err := readLines(fsys, sceneFile, func(line int, text string) error { return b.addSceneTool(sceneFile, line, text) }); err != nil {
			return nil, err
		}
		for _, s := range splits {
			f := path.Join(dir, "query_scene_"+s+".txt")
			if _, err := fs.Stat(fsys, f); err != nil {
				continue
			}
			if err := readLines(fsys, f, func(line int, text string) error { return b.addQueryScene(s, f, line, text) }); err != nil {
				return nil, err
			}
		}
	}
	d, err := b.finish()
	if err != nil {
		return nil, err
	}
	return readHoldout(fsys, dir, d)
}

// readLines calls fn for every line of file (1-based line numbers, trailing \r\n removed).
// Lines of any length are supported.
func readLines(fsys fs.FS, file string, fn func(line int, text string) error) error {
	f, err := fsys.Open(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	defer f.Close()
	return scanLines(file, f, fn)
}

func scanLines(file string, r io.Reader, fn func(line int, text string) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		s, err := br.ReadString('\n')
		if len(s) > 0 {
			s = strings.TrimRight(s, "\r\n")
			if ferr := fn(n, s); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", file, n, err)
		}
	}
}

type jsonRecord struct {
	ID       *json.RawMessage `json:"_id"`
	Title    string           `json:"title"`
	Text     *string          `json:"text"`
	Metadata map[string]any   `json:"metadata"`
}

func readJSONL(fsys fs.FS, file string, add func(file string, line int, rec jsonRecord, id string) error) error {
	return readLines(fsys, file, func(line int, text string) error {
		if strings.TrimSpace(text) == "" {
			return nil
		}
		var rec jsonRecord
		dec := json.NewDecoder(strings.NewReader(text))
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("%s:%d: malformed JSON: %w", file, line, err)
		}
		if dec.More() {
			return fmt.Errorf("%s:%d: malformed JSON: trailing data after the object", file, line)
		}
		id, err := parseID(rec.ID)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if rec.Text == nil || strings.TrimSpace(*rec.Text) == "" {
			return fmt.Errorf("%s:%d: id %q: empty text", file, line, id)
		}
		return add(file, line, rec, id)
	})
}

// parseID accepts a JSON string or number as id.
func parseID(raw *json.RawMessage) (string, error) {
	if raw == nil {
		return "", errors.New(`missing "_id"`)
	}
	var s string
	if err := json.Unmarshal(*raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return "", errors.New(`empty "_id"`)
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(*raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf(`"_id" must be a string or number, got %s`, string(*raw))
}

// builder accumulates a dataset while validating it; positions are kept for error messages.
type builder struct {
	d        *Dataset
	toolAt   []string // "file:line" of each tool
	queryAt  []string
	qrelSeen map[string]map[[2]int]bool
	sceneIdx map[string]int
	sceneSet map[int]map[int]bool
}

func newBuilder(name string) *builder {
	return &builder{
		d: &Dataset{
			Name:       name,
			ToolIndex:  map[string]int{},
			QueryIndex: map[string]int{},
			Splits:     map[string]*Split{},
		},
		qrelSeen: map[string]map[[2]int]bool{},
		sceneIdx: map[string]int{},
		sceneSet: map[int]map[int]bool{},
	}
}

func (b *builder) addTool(file string, line int, rec jsonRecord, id string) error {
	if prev, ok := b.d.ToolIndex[id]; ok {
		return fmt.Errorf("%s:%d: duplicate tool id %q (first at %s)", file, line, id, b.toolAt[prev])
	}
	t := Tool{ID: id, Title: rec.Title, Text: *rec.Text, Metadata: rec.Metadata}
	t.Category, t.ToolName, t.APIName = hierarchy(rec.Metadata, t.Text)
	b.d.ToolIndex[id] = len(b.d.Tools)
	b.d.Tools = append(b.d.Tools, t)
	b.toolAt = append(b.toolAt, fmt.Sprintf("%s:%d", file, line))
	return nil
}

func (b *builder) addQuery(file string, line int, rec jsonRecord, id string) error {
	if prev, ok := b.d.QueryIndex[id]; ok {
		return fmt.Errorf("%s:%d: duplicate query id %q (first at %s)", file, line, id, b.queryAt[prev])
	}
	b.d.QueryIndex[id] = len(b.d.Queries)
	b.d.Queries = append(b.d.Queries, Query{ID: id, Text: *rec.Text})
	b.queryAt = append(b.queryAt, fmt.Sprintf("%s:%d", file, line))
	return nil
}

func (b *builder) split(name string) *Split {
	s := b.d.Splits[name]
	if s == nil {
		s = &Split{Name: name, Relevant: map[int][]int{}}
		b.d.Splits[name] = s
		b.qrelSeen[name] = map[[2]int]bool{}
	}
	return s
}

func (b *builder) addQrel(split, file string, line int, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	f := strings.Split(text, "\t")
	if len(f) == 1 {
		f = strings.Fields(text)
	}
	if line == 1 && len(f) >= 2 && (f[0] == "query-id" || f[0] == "query_id") {
		return nil // header
	}
	if len(f) != 3 && len(f) != 2 {
		return fmt.Errorf("%s:%d: want 3 tab-separated fields (query-id, corpus-id, score), got %d", file, line, len(f))
	}
	score := 1.0
	if len(f) == 3 {
		v, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s:%d: bad score %q", file, line, f[2])
		}
		score = v
	}
	return b.addJudgement(split, fmt.Sprintf("%s:%d", file, line), strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), score)
}

// addJudgement records one qrel; at names its position for errors.
func (b *builder) addJudgement(split, at, qid, tid string, score float64) error {
	q, ok := b.d.QueryIndex[qid]
	if !ok {
		return fmt.Errorf("%s: unknown query id %q", at, qid)
	}
	t, ok := b.d.ToolIndex[tid]
	if !ok {
		return fmt.Errorf("%s: unknown tool id %q", at, tid)
	}
	s := b.split(split)
	if _, known := s.Relevant[q]; !known {
		s.Queries = append(s.Queries, q)
		s.Relevant[q] = nil
	}
	if score <= 0 {
		return nil
	}
	key := [2]int{q, t}
	if b.qrelSeen[split][key] {
		return nil
	}
	b.qrelSeen[split][key] = true
	s.Relevant[q] = append(s.Relevant[q], t)
	return nil
}

func (b *builder) scene(id string) int {
	i, ok := b.sceneIdx[id]
	if !ok {
		i = len(b.d.SceneIDs)
		b.sceneIdx[id] = i
		b.d.SceneIDs = append(b.d.SceneIDs, id)
		b.d.Scenes = append(b.d.Scenes, nil)
		b.sceneSet[i] = map[int]bool{}
	}
	return i
}

func (b *builder) addSceneTool(file string, line int, text string) error {
	f := strings.Fields(text)
	if len(f) == 0 {
		return nil
	}
	if len(f) != 2 {
		return fmt.Errorf("%s:%d: want 2 fields (scene id, tool id), got %d", file, line, len(f))
	}
	if line == 1 && (f[0] == "scene-id" || f[0] == "scene_id") {
		return nil
	}
	return b.addSceneJudgement(fmt.Sprintf("%s:%d", file, line), f[0], f[1])
}

func (b *builder) addSceneJudgement(at, sid, tid string) error {
	t, ok := b.d.ToolIndex[tid]
	if !ok {
		return fmt.Errorf("%s: scene %q names unknown tool id %q", at, sid, tid)
	}
	s := b.scene(sid)
	if !b.sceneSet[s][t] {
		b.sceneSet[s][t] = true
		b.d.Scenes[s] = append(b.d.Scenes[s], t)
	}
	return nil
}

func (b *builder) addQueryScene(split, file string, line int, text string) error {
	f := strings.Fields(text)
	if len(f) == 0 {
		return nil
	}
	if len(f) != 2 {
		return fmt.Errorf("%s:%d: want 2 fields (query id, scene id), got %d", file, line, len(f))
	}
	if line == 1 && (f[0] == "query-id" || f[0] == "query_id") {
		return nil
	}
	return b.addQuerySceneJudgement(split, fmt.Sprintf("%s:%d", file, line), f[0], f[1])
}

func (b *builder) addQuerySceneJudgement(split, at, qid, sid string) error {
	q, ok := b.d.QueryIndex[qid]
	if !ok {
		return fmt.Errorf("%s: unknown query id %q", at, qid)
	}
	s, ok := b.sceneIdx[sid]
	if !ok {
		return fmt.Errorf("%s: unknown scene id %q (not in scene_tool)", at, sid)
	}
	sp := b.d.Splits[split]
	if sp == nil {
		return fmt.Errorf("%s: split %q has no qrels", at, split)
	}
	if _, ok := sp.Relevant[q]; !ok {
		return fmt.Errorf("%s: query %q is not in split %q", at, qid, split)
	}
	if sp.Scene == nil {
		sp.Scene = map[int]int{}
	}
	sp.Scene[q] = s
	return nil
}

// WarnOutput receives the Warnings of every dataset loaded, one "data: warning: " line each
// (nil: none are printed).
var WarnOutput io.Writer = os.Stderr

// maxUnnamed is how many unnamed tools a warning lists.
const maxUnnamed = 5

// warnUnnamed records a warning for the tools with no title and no tool or API name: nothing
// names them but their id (serve's find_tools, the refiner's and LLM feedback's tool views,
// the textview augmentations that need a name). An empty title alone is common (ToolLens,
// the default dataset): the hierarchy names those tools.
func (b *builder) warnUnnamed() {
	var at []string
	n := 0
	for i, t := range b.d.Tools {
		if strings.TrimSpace(t.Title) != "" || t.ToolName != "" || t.APIName != "" {
			continue
		}
		if n++; n <= maxUnnamed {
			at = append(at, fmt.Sprintf("%s (id %q)", b.toolAt[i], t.ID))
		}
	}
	if n == 0 {
		return
	}
	more := ""
	if n > maxUnnamed {
		more = fmt.Sprintf(", and %d more", n-maxUnnamed)
	}
	b.d.Warnings = append(b.d.Warnings, fmt.Sprintf(
		"dataset %s: %d of %d tools have no title and no tool or API name (metadata tool_name/api_name, or ToolBench-style text); they are named by their id: %s%s",
		b.d.Name, n, len(b.d.Tools), strings.Join(at, ", "), more))
}

// finish validates the whole dataset, sorts relevance lists and derives scenes if absent.
func (b *builder) finish() (*Dataset, error) {
	d := b.d
	if len(d.Tools) == 0 {
		return nil, fmt.Errorf("dataset %s: no tools", d.Name)
	}
	if len(d.Queries) == 0 {
		return nil, fmt.Errorf("dataset %s: no queries", d.Name)
	}
	for name, s := range d.Splits {
		n := 0
		for _, q := range s.Queries {
			sort.Ints(s.Relevant[q])
			if len(s.Relevant[q]) > 0 {
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("dataset %s: split %q has no queries with a relevant tool", d.Name, name)
		}
	}
	for i := range d.Scenes {
		sort.Ints(d.Scenes[i])
	}
	if len(d.Scenes) == 0 {
		deriveScenes(d)
	}
	b.warnUnnamed()
	if WarnOutput != nil {
		for _, w := range d.Warnings {
			fmt.Fprintln(WarnOutput, "data: warning:", w)
		}
	}
	return d, nil
}

// deriveScenes makes one scene per distinct ground-truth tool set over all splits (in sorted
// split order, then query order) and assigns every judged query its scene.
func deriveScenes(d *Dataset) {
	idx := map[string]int{}
	for _, name := range d.SplitNames() {
		s := d.Splits[name]
		s.Scene = map[int]int{}
		for _, q := range s.Queries {
			rel := s.Relevant[q]
			if len(rel) == 0 {
				continue
			}
			key := fmt.Sprint(rel)
			i, ok := idx[key]
			if !ok {
				i = len(d.Scenes)
				idx[key] = i
				d.Scenes = append(d.Scenes, append([]int(nil), rel...))
				d.SceneIDs = append(d.SceneIDs, strconv.Itoa(i))
			}
			s.Scene[q] = i
		}
	}
}

// SplitNames returns the split names in sorted order.
func (d *Dataset) SplitNames() []string {
	names := make([]string, 0, len(d.Splits))
	for n := range d.Splits {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
