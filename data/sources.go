package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Library is one tool library of a multi-source dataset (Dataset.Libraries): a dataset
// directory, or one source inside a dataset whose tool ids carry a "SOURCE/" prefix (toolmix).
// Its tools and queries are ranked, batched and evaluated among themselves only.
type Library struct {
	// Name is the library's name: the dataset's ("toollens"), or dataset/source
	// ("toolmix/seal_tools").
	Name string `json:"name"`
	// Weight is the library's share of the training batches (the weights of all libraries
	// sum to 1).
	Weight float64 `json:"weight"`
	// Tools are the library's tool indices, sorted.
	Tools []int `json:"-"`
	// View marks a library read from a held-out-tool view (`convert -holdout-tools`):
	// CarveDev carves its dev split by tools, as it carves a view's own, so that model
	// selection on it measures tools the model did not train on.
	View bool `json:"view,omitempty"`
}

// SourceSpec is one entry of a -data list: a dataset directory (or a name looked up in
// DatasetPath), optionally one source inside it, and its sampling weight.
type SourceSpec struct {
	// Path is the entry as written, without its weight.
	Path string
	// Weight is the entry's sampling weight (> 0; 1 when not written).
	Weight float64
}

// DatasetPathEnv names the environment variable listing the directories (separated by the
// OS's list separator) in which a -data entry that is not a directory is looked up by name.
// Unset, the list is "../shared/datasets".
const DatasetPathEnv = "TOOLRET_DATASETS"

// DatasetPath returns the directories a dataset name is looked up in ($TOOLRET_DATASETS, or
// ../shared/datasets).
func DatasetPath() []string {
	if v := os.Getenv(DatasetPathEnv); v != "" {
		return filepath.SplitList(v)
	}
	return []string{filepath.Join("..", "shared", "datasets")}
}

// IsSourceList reports whether spec names several sources or weights (a comma, or a
// trailing ":WEIGHT"), rather than one dataset directory.
func IsSourceList(spec string) bool {
	if strings.Contains(spec, ",") {
		return true
	}
	_, _, ok, err := cutWeight(spec)
	return ok || err != nil
}

// ParseSources parses a -data list "ENTRY[:WEIGHT],ENTRY[:WEIGHT],...": each entry a dataset
// directory or name, or DATASET/SOURCE for one source of a dataset whose tool ids carry a
// "SOURCE/" prefix; the weight, a number > 0, defaults to 1.
func ParseSources(spec string) ([]SourceSpec, error) {
	var out []SourceSpec
	for _, part := range strings.Split(spec, ",") {
		e := strings.TrimSpace(part)
		if e == "" {
			return nil, fmt.Errorf("-data %q: an empty entry", spec)
		}
		p, w, ok, err := cutWeight(e)
		if err != nil {
			return nil, fmt.Errorf("-data entry %q: %w", e, err)
		}
		if !ok {
			w = 1
		}
		if !(w > 0) {
			return nil, fmt.Errorf("-data entry %q: weight %v: must be > 0", e, w)
		}
		out = append(out, SourceSpec{Path: p, Weight: w})
	}
	return out, nil
}

// cutWeight splits "PATH:WEIGHT" at its last colon when what follows is a number; ok is
// false when there is no weight. A colon followed by something that is not a number is an
// error unless PATH:... exists as a file.
func cutWeight(e string) (path string, w float64, ok bool, err error) {
	i := strings.LastIndexByte(e, ':')
	if i < 0 {
		return e, 0, false, nil
	}
	if _, serr := os.Stat(e); serr == nil { // a path with a colon in it
		return e, 0, false, nil
	}
	v, perr := strconv.ParseFloat(e[i+1:], 64)
	if perr != nil {
		return e, 0, false, fmt.Errorf("weight %q: not a number", e[i+1:])
	}
	return e[:i], v, true, nil
}

// OpenSources opens a -data value for training: "" or one dataset directory (or name, looked
// up in DatasetPath) as Open does (a mix of sources, a directory with a SourcesFile whose tool
// ids carry a "SOURCE/" prefix, gets one Library per source); a list (ParseSources) is merged into one Dataset with one Library per
// dataset, or per source of a prefixed dataset, tool, query and scene ids prefixed by the
// dataset's name ("toollens:12"). Each library's weight is its entry's, a dataset's weight
// shared among its sources in proportion to their training pairs, normalised to sum 1.
// Every source must have a "train" split.
//
// An entry may be a held-out-tool view written by `convert -holdout-tools` (a directory with
// HoldoutFile): its held-out tools' queries stay in its "test" split, never in training, and
// the merged Dataset lists them in HeldOut. The merged Dataset itself is not a view (Holdout
// is nil): its dev split is carved per library, by queries, and by tools in the view's
// library (Library.View).
func OpenSources(spec string) (*Dataset, error) {
	single := spec == ""
	if !single && !IsSourceList(spec) {
		dir, source, err := resolveSource(spec)
		if err != nil {
			return nil, err
		}
		if single = source == ""; single {
			spec = dir
		}
	}
	if single {
		d, err := Open(spec, nil)
		if err != nil {
			return nil, err
		}
		if libs, lib := sourceLibraries(spec, d); len(libs) > 1 {
			if err := weighLibraries(d, libs, lib, 1); err != nil {
				return nil, err
			}
			d.Libraries, d.ToolLibrary = normalise(libs), lib
		}
		return d, nil
	}
	specs, err := ParseSources(spec)
	if err != nil {
		return nil, err
	}
	type entry struct {
		name    string
		d       *Dataset
		sources []string // "": all
		weight  float64
	}
	var entries []*entry
	byDir := map[string]*entry{}
	for _, s := range specs {
		dir, source, err := resolveSource(s.Path)
		if err != nil {
			return nil, err
		}
		e, ok := byDir[dir]
		if !ok {
			d, err := Open(dir, nil)
			if err != nil {
				return nil, fmt.Errorf("-data entry %q: %w", s.Path, err)
			}
			if _, ok := d.Splits["train"]; !ok {
				return nil, fmt.Errorf("-data entry %q: dataset %s has no \"train\" split (splits: %s)", s.Path, d.Name, strings.Join(d.SplitNames(), ", "))
			}
			e = &entry{name: filepath.Base(filepath.Clean(dir)), d: d}
			for _, o := range entries {
				if o.name == e.name {
					return nil, fmt.Errorf("-data entry %q: two datasets named %s (%s): rename one directory", s.Path, e.name, dir)
				}
			}
			byDir[dir] = e
			entries = append(entries, e)
		} else if source == "" || slices.Contains(e.sources, "") {
			return nil, fmt.Errorf("-data entry %q: dataset %s listed twice", s.Path, e.name)
		}
		if source != "" {
			libs, _ := sourceLibraries(dir, e.d)
			if !slices.ContainsFunc(libs, func(l Library) bool { return l.Name == source }) {
				names := make([]string, len(libs))
				for i, l := range libs {
					names[i] = l.Name
				}
				if len(names) == 0 {
					return nil, fmt.Errorf("-data entry %q: dataset %s has no sources (a mix lists them in %s, its tool ids prefixed SOURCE/)", s.Path, e.name, SourcesFile)
				}
				return nil, fmt.Errorf("-data entry %q: dataset %s has no source %q (sources: %s)", s.Path, e.name, source, strings.Join(names, ", "))
			}
			if slices.Contains(e.sources, source) {
				return nil, fmt.Errorf("-data entry %q: source listed twice", s.Path)
			}
		}
		e.sources = append(e.sources, source)
		if source == "" {
			e.weight = s.Weight
		}
	}
	// Per-source weights of entries naming sources.
	srcWeight := map[string]float64{}
	for _, s := range specs {
		dir, source, _ := resolveSource(s.Path)
		if source != "" {
			srcWeight[dir+"\x00"+source] = s.Weight
		}
	}
	m := newMerger(entries[0].name)
	var names []string
	for _, e := range entries {
		names = append(names, e.name)
	}
	m.out.Name = strings.Join(names, "+")
	for _, e := range entries {
		dir := ""
		for k, v := range byDir {
			if v == e {
				dir = k
			}
		}
		libs, lib := sourceLibraries(dir, e.d)
		keep := func(t int) bool { return true }
		if !slices.Contains(e.sources, "") {
			want := map[int]bool{}
			for i, l := range libs {
				if slices.Contains(e.sources, l.Name) {
					want[i] = true
				}
			}
			keep = func(t int) bool { return want[lib[t]] }
		}
		var wlibs []Library
		var wlib []int
		if len(libs) > 1 {
			if slices.Contains(e.sources, "") {
				if err := weighLibraries(e.d, libs, lib, e.weight); err != nil {
					return nil, err
				}
			} else {
				for i := range libs {
					libs[i].Weight = srcWeight[dir+"\x00"+libs[i].Name]
				}
			}
			wlibs, wlib = libs, lib
		} else {
			wlibs = []Library{{Name: "", Weight: e.weight}}
			wlib = make([]int, len(e.d.Tools))
		}
		if err := m.add(e.name, e.d, keep, wlibs, wlib); err != nil {
			return nil, err
		}
	}
	d, err := m.finish()
	if err != nil {
		return nil, err
	}
	for _, l := range d.Libraries {
		if !(l.Weight > 0) {
			return nil, fmt.Errorf("-data %q: library %s has no weight", spec, l.Name)
		}
	}
	d.Libraries = normalise(d.Libraries)
	return d, nil
}

// resolveSource resolves an entry's path to a dataset directory and an optional source: a
// directory as it is; else DIR/SOURCE with DIR a dataset directory; each also looked up under
// DatasetPath when relative and absent.
func resolveSource(p string) (dir, source string, err error) {
	cands := []string{p}
	if !filepath.IsAbs(p) {
		for _, root := range DatasetPath() {
			cands = append(cands, filepath.Join(root, p))
		}
	}
	for _, c := range cands {
		if isDir(c) {
			return filepath.Clean(c), "", nil
		}
	}
	for _, c := range cands {
		parent, base := filepath.Split(filepath.Clean(c))
		if parent != "" && isDir(parent) && isDatasetDir(parent) {
			return filepath.Clean(parent), base, nil
		}
	}
	return "", "", fmt.Errorf("-data entry %q: no such dataset directory (looked in ., %s; set $%s)", p, strings.Join(DatasetPath(), ", "), DatasetPathEnv)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// isDatasetDir reports whether dir looks like a dataset (a BEIR corpus or Parquet files).
func isDatasetDir(dir string) bool {
	for _, f := range []string{"corpus.jsonl", "corpus.parquet", "tools.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	m, _ := fs.Glob(os.DirFS(dir), "*.parquet")
	return len(m) > 0
}

// SourcesFile marks a dataset directory as a mix of sources (toolmix): it lists them, and
// each tool id carries its source as a "SOURCE/" prefix. A dataset without it is one library
// whatever its ids look like (a gateway library's "server/tool" names are searched together).
const SourcesFile = "sources.tsv"

// sourceLibraries is prefixLibraries of the dataset d loaded from dir when dir is a mix
// (SourcesFile); else nil.
func sourceLibraries(dir string, d *Dataset) ([]Library, []int) {
	if dir == "" {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(dir, SourcesFile)); err != nil {
		return nil, nil
	}
	return prefixLibraries(d)
}

// prefixLibraries returns one Library per "SOURCE/" prefix of d's tool ids (sorted by name)
// and each tool's library, when every tool id has one; else nil.
func prefixLibraries(d *Dataset) ([]Library, []int) {
	if len(d.Tools) == 0 {
		return nil, nil
	}
	srcs := map[string]bool{}
	for _, t := range d.Tools {
		s, _, ok := strings.Cut(t.ID, "/")
		if !ok || s == "" {
			return nil, nil
		}
		srcs[s] = true
	}
	names := make([]string, 0, len(srcs))
	for s := range srcs {
		names = append(names, s)
	}
	sort.Strings(names)
	idx := map[string]int{}
	libs := make([]Library, len(names))
	for i, n := range names {
		libs[i].Name, idx[n] = n, i
	}
	lib := make([]int, len(d.Tools))
	for i, t := range d.Tools {
		s, _, _ := strings.Cut(t.ID, "/")
		lib[i] = idx[s]
		libs[lib[i]].Tools = append(libs[lib[i]].Tools, i)
	}
	return libs, lib
}

// weighLibraries shares w among libs in proportion to their training pairs (a pair's library
// is its tool's). A library with no training pair is an error.
func weighLibraries(d *Dataset, libs []Library, lib []int, w float64) error {
	s, ok := d.Splits["train"]
	if !ok {
		return fmt.Errorf("dataset %s has no \"train\" split (splits: %s)", d.Name, strings.Join(d.SplitNames(), ", "))
	}
	n := make([]int, len(libs))
	total := 0
	for _, q := range s.Judged() {
		for _, t := range s.Relevant[q] {
			n[lib[t]]++
			total++
		}
	}
	var empty []string
	for i := range libs {
		if n[i] == 0 {
			empty = append(empty, libs[i].Name)
		}
		if total > 0 {
			libs[i].Weight = w * float64(n[i]) / float64(total)
		}
	}
	if len(empty) > 0 {
		return fmt.Errorf("dataset %s: source %s has no training pairs", d.Name, strings.Join(empty, ", "))
	}
	return nil
}

func normalise(libs []Library) []Library {
	sum := 0.0
	for _, l := range libs {
		sum += l.Weight
	}
	for i := range libs {
		libs[i].Weight /= sum
	}
	return libs
}

// merger builds one Dataset out of several.
type merger struct {
	out *Dataset
}

func newMerger(name string) *merger {
	return &merger{out: &Dataset{Name: name, ToolIndex: map[string]int{}, QueryIndex: map[string]int{}, Splits: map[string]*Split{}}}
}

// add appends the tools of d that keep accepts, with the queries judged on them, ids
// prefixed "name:". libs are d's libraries (one unnamed library: d whole) and lib each tool's.
func (m *merger) add(name string, d *Dataset, keep func(t int) bool, libs []Library, lib []int) error {
	o := m.out
	base := len(o.Libraries)
	libIdx := map[int]int{}
	toolMap := make([]int, len(d.Tools))
	for i, t := range d.Tools {
		toolMap[i] = -1
		if !keep(i) {
			continue
		}
		li, ok := libIdx[lib[i]]
		if !ok {
			l := libs[lib[i]]
			n := name
			if l.Name != "" {
				n = name + "/" + l.Name
			}
			li = base + len(libIdx)
			libIdx[lib[i]] = li
			o.Libraries = append(o.Libraries, Library{Name: n, Weight: l.Weight, View: d.Holdout != nil})
		}
		t.ID = name + ":" + t.ID
		if _, dup := o.ToolIndex[t.ID]; dup {
			return fmt.Errorf("merge %s: tool id %s twice", name, t.ID)
		}
		toolMap[i] = len(o.Tools)
		o.ToolIndex[t.ID] = len(o.Tools)
		o.Tools = append(o.Tools, t)
		o.ToolLibrary = append(o.ToolLibrary, li)
		o.Libraries[li].Tools = append(o.Libraries[li].Tools, toolMap[i])
	}
	queryMap := map[int]int{}
	sceneMap := map[int]int{}
	for _, sn := range d.SplitNames() {
		s := d.Splits[sn]
		dst, ok := o.Splits[sn]
		if !ok {
			dst = &Split{Name: sn, Relevant: map[int][]int{}}
			o.Splits[sn] = dst
		}
		for _, q := range s.Queries {
			rel := s.Relevant[q]
			if len(rel) > 0 && toolMap[rel[0]] < 0 {
				continue // a query of a source left out
			}
			var mapped []int
			for _, t := range rel {
				if toolMap[t] < 0 {
					return fmt.Errorf("merge %s: query %s is judged on tools of two sources (%s and %s)", name, d.Queries[q].ID, d.Tools[rel[0]].ID, d.Tools[t].ID)
				}
				mapped = append(mapped, toolMap[t])
			}
			nq, ok := queryMap[q]
			if !ok {
				nq = len(o.Queries)
				qq := d.Queries[q]
				qq.ID = name + ":" + qq.ID
				o.QueryIndex[qq.ID] = nq
				o.Queries = append(o.Queries, qq)
				queryMap[q] = nq
			}
			dst.Queries = append(dst.Queries, nq)
			if len(mapped) > 0 {
				dst.Relevant[nq] = mapped
			}
			if sc, ok := s.Scene[q]; ok {
				ns, ok := sceneMap[sc]
				if !ok {
					ns = len(o.Scenes)
					var tools []int
					for _, t := range d.Scenes[sc] {
						if toolMap[t] >= 0 {
							tools = append(tools, toolMap[t])
						}
					}
					o.Scenes = append(o.Scenes, tools)
					id := strconv.Itoa(sc)
					if sc < len(d.SceneIDs) {
						id = d.SceneIDs[sc]
					}
					o.SceneIDs = append(o.SceneIDs, name+":"+id)
					sceneMap[sc] = ns
				}
				if dst.Scene == nil {
					dst.Scene = map[int]int{}
				}
				dst.Scene[nq] = ns
			}
		}
	}
	for _, t := range d.HeldOut {
		if toolMap[t] >= 0 {
			o.HeldOut = append(o.HeldOut, toolMap[t])
		}
	}
	for _, w := range d.Warnings {
		o.Warnings = append(o.Warnings, name+": "+w)
	}
	return nil
}

func (m *merger) finish() (*Dataset, error) {
	o := m.out
	for n, s := range o.Splits {
		if len(s.Queries) == 0 {
			delete(o.Splits, n)
		}
	}
	if len(o.Tools) == 0 {
		return nil, errors.New("merge: no tools")
	}
	return o, nil
}

// LibraryOf returns the library of tool t (0 on a dataset of one library).
func (d *Dataset) LibraryOf(t int) int {
	if d.ToolLibrary == nil || t < 0 || t >= len(d.ToolLibrary) {
		return 0
	}
	return d.ToolLibrary[t]
}

// QueryLibrary returns the library of query q in split s: its first relevant tool's (-1 when
// q has none).
func (d *Dataset) QueryLibrary(s *Split, q int) int {
	rel := s.Relevant[q]
	if len(rel) == 0 {
		return -1
	}
	return d.LibraryOf(rel[0])
}

// OpenView opens dir as the held-out-tool view h when h is set (Open), else as OpenSources
// does: what evaluation opens, so that a multi-source run's dev split and libraries are found
// again (eval -data toollens:1,toolmix:1 -split dev -first-stage RUN).
func OpenView(dir string, h *Holdout) (*Dataset, error) {
	if h == nil {
		return OpenSources(dir)
	}
	if IsSourceList(dir) {
		return nil, fmt.Errorf("-data %q: %s applies to one dataset, not a list of sources", dir, h.Flags())
	}
	return Open(dir, h)
}

// QueryLibraryAny returns the library of query q judged in any split of d (-1 when none
// judges it).
func (d *Dataset) QueryLibraryAny(q int) int {
	for _, name := range d.SplitNames() {
		if l := d.QueryLibrary(d.Splits[name], q); l >= 0 {
			return l
		}
	}
	return -1
}
