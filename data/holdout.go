package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/jsonfile"
)

// Holdout identifies a held-out-tool view of a dataset (Dataset.HoldoutTools): the fraction
// of the judged tools held out of training and the seed that drew them.
type Holdout struct {
	Fraction float64 `json:"fraction"`
	Seed     int64   `json:"seed"`
}

// NewHoldout returns the held-out-tool view of fraction frac of the judged tools, seeded by
// seed: nil for frac 0 (the dataset's own splits), an error (the setting holdout-tools)
// unless frac is in [0, 1).
func NewHoldout(frac float64, seed uint64) (*Holdout, error) {
	if frac == 0 {
		return nil, nil
	}
	if !(frac > 0 && frac < 1) {
		return nil, check.Invalid("holdout-tools", frac, "must be in [0, 1) (0: the dataset's own splits)")
	}
	return &Holdout{Fraction: frac, Seed: int64(seed)}, nil
}

// Flags returns the command-line flags that make this view ("no -holdout-tools" for nil).
func (h *Holdout) Flags() string {
	if h == nil {
		return "no -holdout-tools"
	}
	return fmt.Sprintf("-holdout-tools %g -holdout-seed %d", h.Fraction, h.Seed)
}

// HoldoutFile is the file a held-out-tool view written by WriteBEIR or WriteParquet carries,
// so that loading it again gives the same view (the same Holdout, fingerprint and dev
// carving by tools).
const HoldoutFile = "holdout.json"

// Streams of the random generators: the held-out tools and the dev tools are drawn from
// different streams, so equal seeds do not pick related tools.
const (
	holdoutStream = 0x686f6c646f7574
	devToolStream = 0x646576746f6f6c
)

// HoldoutTools returns the held-out-tool view of d: a deterministic random fraction frac
// (0 < frac < 1, rounded to whole tools) of the tools relevant to some judged query of any
// split is held out, drawn with seed. The judged queries of every split are pooled (a query
// judged in several splits keeps the union of its relevant tools); every query that needs a
// held-out tool forms the "test" split, the others "train". A query that needs several
// tools goes to test when any one of them is held out, and its other (seen) tools stay
// relevant there. Tools, queries and scenes are d's (shared, not copied); d is not modified.
//
// A view's dev splits are carved by tools too (CarveDev), so model selection measures tools
// the model did not train on.
func (d *Dataset) HoldoutTools(frac float64, seed int64) (*Dataset, error) {
	if d.Holdout != nil {
		return nil, fmt.Errorf("dataset %s is already a held-out-tool view (%s): hold out tools once", d.Name, d.Holdout.Flags())
	}
	if !(frac > 0 && frac < 1) {
		return nil, fmt.Errorf("held-out tool fraction %v: want 0 < frac < 1", frac)
	}
	if !d.HasQueries() {
		return nil, fmt.Errorf("dataset %s: hold out tools: %w", d.Name, ErrNoQueries)
	}
	rel := map[int][]int{}
	scene := map[int]int{}
	for _, name := range d.SplitNames() {
		s := d.Splits[name]
		for _, q := range s.Judged() {
			rel[q] = union(rel[q], s.Relevant[q])
			if sc, ok := s.Scene[q]; ok {
				if _, had := scene[q]; !had {
					scene[q] = sc
				}
			}
		}
	}
	judged := map[int]bool{}
	for _, r := range rel {
		for _, t := range r {
			judged[t] = true
		}
	}
	held, err := drawTools(judged, frac, seed, holdoutStream)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: hold out tools: %w", d.Name, err)
	}
	train := &Split{Name: "train", Relevant: map[int][]int{}, Scene: map[int]int{}}
	test := &Split{Name: "test", Relevant: map[int][]int{}, Scene: map[int]int{}}
	for q := range d.Queries { // query order: deterministic
		r, ok := rel[q]
		if !ok {
			continue
		}
		dst := train
		if anyIn(r, held) {
			dst = test
		}
		dst.Queries = append(dst.Queries, q)
		dst.Relevant[q] = r
		if sc, ok := scene[q]; ok {
			dst.Scene[q] = sc
		}
	}
	if len(train.Queries) == 0 || len(test.Queries) == 0 {
		return nil, fmt.Errorf("dataset %s: holding out %d of %d judged tools (fraction %v, seed %d) leaves %d training and %d test queries: want both",
			d.Name, len(held), len(judged), frac, seed, len(train.Queries), len(test.Queries))
	}
	v := *d
	v.Name = fmt.Sprintf("%s (held-out tools %g, seed %d)", d.Name, frac, seed)
	v.Splits = map[string]*Split{"train": train, "test": test}
	v.Holdout = &Holdout{Fraction: frac, Seed: seed}
	v.HeldOut = sortedKeys(held)
	return &v, nil
}

// CarveDevTools splits the judged queries of split from into (train, dev) by tools: a
// deterministic random fraction frac (0 < frac < 1, rounded to whole tools) of the tools
// relevant in from is drawn with seed, and every query that needs one of them is a dev
// query. The training part never sees a dev tool, so dev measures tools the model has not
// trained on. CarveDev uses it on a held-out-tool view.
func (d *Dataset) CarveDevTools(from string, frac float64, seed int64) (train, dev *Split, err error) {
	s, err := d.Split(from)
	if err != nil {
		return nil, nil, err
	}
	if !(frac > 0 && frac < 1) {
		return nil, nil, fmt.Errorf("dev fraction %v: want 0 < frac < 1", frac)
	}
	judged := map[int]bool{}
	for _, q := range s.Judged() {
		for _, t := range s.Relevant[q] {
			judged[t] = true
		}
	}
	devTools, err := drawTools(judged, frac, seed, devToolStream)
	if err != nil {
		return nil, nil, fmt.Errorf("split %q: dev tools: %w", from, err)
	}
	train, dev = s.Divide(func(q int) bool { return anyIn(s.Relevant[q], devTools) })
	if len(train.Queries) == 0 || len(dev.Queries) == 0 {
		return nil, nil, fmt.Errorf("split %q: %d dev tools (fraction %v of %d) leave %d training and %d dev queries: want both",
			from, len(devTools), frac, len(judged), len(train.Queries), len(dev.Queries))
	}
	return train, dev, nil
}

// drawTools draws round(frac·|tools|) of tools (at least 1, fewer than all) with seed and
// stream; the draw depends only on the sorted tool set, seed and stream.
func drawTools(tools map[int]bool, frac float64, seed int64, stream uint64) (map[int]bool, error) {
	all := sortedKeys(tools)
	n := int(float64(len(all))*frac + 0.5)
	if n == 0 || n >= len(all) {
		return nil, fmt.Errorf("fraction %v of %d tools is %d: want at least 1 and fewer than all", frac, len(all), n)
	}
	r := rand.New(rand.NewPCG(uint64(seed), stream))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	out := make(map[int]bool, n)
	for _, t := range all[:n] {
		out[t] = true
	}
	return out, nil
}

// union returns the sorted union of two sorted, duplicate-free lists (a new slice when b adds
// to a).
func union(a, b []int) []int {
	if len(a) == 0 {
		return b
	}
	set := map[int]bool{}
	for _, t := range a {
		set[t] = true
	}
	grew := false
	for _, t := range b {
		if !set[t] {
			set[t], grew = true, true
		}
	}
	if !grew {
		return a
	}
	return sortedKeys(set)
}

func anyIn(ts []int, set map[int]bool) bool {
	for _, t := range ts {
		if set[t] {
			return true
		}
	}
	return false
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// holdoutRecord is the content of HoldoutFile.
type holdoutRecord struct {
	Holdout
	// Source is the name of the dataset the view was made from.
	Source string `json:"source,omitempty"`
	// Tools are the ids of the held-out tools.
	Tools []string `json:"held_out_tools"`
}

// writeHoldout writes HoldoutFile into dir when d is a held-out-tool view.
func writeHoldout(d *Dataset, dir string) error {
	if d.Holdout == nil {
		return nil
	}
	rec := holdoutRecord{Holdout: *d.Holdout, Source: d.Name, Tools: make([]string, len(d.HeldOut))}
	for i, t := range d.HeldOut {
		rec.Tools[i] = d.Tools[t].ID
	}
	return jsonfile.Write(filepath.Join(dir, HoldoutFile), rec)
}

// readHoldout marks d as a held-out-tool view when dir of fsys has HoldoutFile, and checks it
// against d's splits: no held-out tool is relevant to a training query.
func readHoldout(fsys fs.FS, dir string, d *Dataset) (*Dataset, error) {
	file := path.Join(dir, HoldoutFile)
	b, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	var rec holdoutRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("dataset %s: %s: malformed JSON: %w", d.Name, HoldoutFile, err)
	}
	if !(rec.Fraction > 0 && rec.Fraction < 1) || len(rec.Tools) == 0 {
		return nil, fmt.Errorf("dataset %s: %s: want a fraction in (0, 1) and the held-out tools", d.Name, HoldoutFile)
	}
	held := map[int]bool{}
	for _, id := range rec.Tools {
		t, ok := d.ToolIndex[id]
		if !ok {
			return nil, fmt.Errorf("dataset %s: %s: unknown tool id %q", d.Name, HoldoutFile, id)
		}
		held[t] = true
	}
	if tr, ok := d.Splits["train"]; ok {
		for _, q := range tr.Judged() {
			if anyIn(tr.Relevant[q], held) {
				return nil, fmt.Errorf("dataset %s: %s: training query %q needs a held-out tool", d.Name, HoldoutFile, d.Queries[q].ID)
			}
		}
	}
	d.Holdout = &Holdout{Fraction: rec.Fraction, Seed: rec.Seed}
	d.HeldOut = sortedKeys(held)
	return d, nil
}

// Open loads the dataset at dir (Load; "" is the embedded default dataset) and, when h is
// not nil, returns its held-out-tool view (HoldoutTools).
func Open(dir string, h *Holdout) (*Dataset, error) {
	var d *Dataset
	var err error
	if dir == "" {
		d, err = Default()
	} else {
		d, err = Load(dir)
	}
	if err != nil || h == nil {
		return d, err
	}
	return d.HoldoutTools(h.Fraction, h.Seed)
}

// loadHoldout is readHoldout for a directory on disk.
func loadHoldout(dir string, d *Dataset) (*Dataset, error) {
	return readHoldout(os.DirFS(dir), ".", d)
}
