package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// Split returns the named split, or an error listing the available ones.
func (d *Dataset) Split(name string) (*Split, error) {
	if s, ok := d.Splits[name]; ok {
		return s, nil
	}
	if len(d.Splits) == 0 {
		return nil, fmt.Errorf("dataset %s: no split %q: %w", d.Name, name, ErrNoQueries)
	}
	return nil, fmt.Errorf("dataset %s: no split %q (have %s)", d.Name, name, strings.Join(d.SplitNames(), ", "))
}

// Judged returns the split's queries that have at least one relevant tool.
func (s *Split) Judged() []int {
	out := make([]int, 0, len(s.Queries))
	for _, q := range s.Queries {
		if len(s.Relevant[q]) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// Pairs returns every (query, relevant tool) pair of the split, in query order.
func (s *Split) Pairs() [][2]int {
	var out [][2]int
	for _, q := range s.Queries {
		for _, t := range s.Relevant[q] {
			out = append(out, [2]int{q, t})
		}
	}
	return out
}

// Seen reports, per tool, whether it appears in the qrels of the named split (normally
// "train"). An unknown split gives all false.
func (d *Dataset) Seen(split string) []bool {
	seen := make([]bool, len(d.Tools))
	if s, ok := d.Splits[split]; ok {
		for _, rel := range s.Relevant {
			for _, t := range rel {
				seen[t] = true
			}
		}
	}
	return seen
}

// CarveDev splits the judged queries of split from into (train, dev): a deterministic random
// fraction frac (0 < frac < 1) of them becomes dev. Trainers select models on dev, never on
// the test split. On a held-out-tool view (d.Holdout set) dev is carved by tools instead
// (CarveDevTools): frac of the training tools, and every query that needs one of them. A
// dataset of several libraries gets frac of each library's queries, and of the tools of a
// library read from a view (Library.View).
func (d *Dataset) CarveDev(from string, frac float64, seed int64) (train, dev *Split, err error) {
	if d.Holdout != nil {
		return d.CarveDevTools(from, frac, seed)
	}
	s, err := d.Split(from)
	if err != nil {
		return nil, nil, err
	}
	if frac <= 0 || frac >= 1 {
		return nil, nil, fmt.Errorf("dev fraction %v: want 0 < frac < 1", frac)
	}
	qs := s.Judged()
	nDev := int(float64(len(qs))*frac + 0.5)
	if nDev == 0 || nDev == len(qs) {
		return nil, nil, fmt.Errorf("split %q: %d judged queries cannot give a dev fraction of %v", from, len(qs), frac)
	}
	isDev := map[int]bool{}
	if len(d.Libraries) > 1 { // frac of each library's queries, so that each has a dev split
		byLib := make([][]int, len(d.Libraries))
		for _, q := range qs {
			if l := d.QueryLibrary(s, q); l >= 0 {
				byLib[l] = append(byLib[l], q)
			}
		}
		for l, lq := range byLib {
			if d.Libraries[l].View { // a held-out-tool view's library: frac of its tools
				devTools, err := libraryDevTools(s, lq, frac, seed, l)
				if err != nil {
					return nil, nil, fmt.Errorf("split %q: library %s: dev tools: %w", from, d.Libraries[l].Name, err)
				}
				n := 0
				for _, q := range lq {
					if anyIn(s.Relevant[q], devTools) {
						isDev[q] = true
						n++
					}
				}
				if n == len(lq) {
					return nil, nil, fmt.Errorf("split %q: library %s: %d dev tools (fraction %v) leave it no training query", from, d.Libraries[l].Name, len(devTools), frac)
				}
				continue
			}
			r := rand.New(rand.NewPCG(uint64(seed), 0x746f6f6c726574+uint64(l)))
			r.Shuffle(len(lq), func(i, j int) { lq[i], lq[j] = lq[j], lq[i] })
			n := int(float64(len(lq))*frac + 0.5)
			if n == 0 && len(lq) >= 2 {
				n = 1
			}
			for _, q := range lq[:n] {
				isDev[q] = true
			}
		}
		train, dev = s.Divide(func(q int) bool { return isDev[q] })
		return train, dev, nil
	}
	perm := append([]int(nil), qs...)
	r := rand.New(rand.NewPCG(uint64(seed), 0x746f6f6c726574))
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	for _, q := range perm[:nDev] {
		isDev[q] = true
	}
	train, dev = s.Divide(func(q int) bool { return isDev[q] })
	return train, dev, nil
}

// Divide splits the judged queries of s, in order, into (train, dev) by isDev, keeping their
// relevant tools and scenes; the parts are named s.Name+"-train" and s.Name+"-dev".
func (s *Split) Divide(isDev func(q int) bool) (train, dev *Split) {
	train = &Split{Name: s.Name + "-train", Relevant: map[int][]int{}}
	dev = &Split{Name: s.Name + "-dev", Relevant: map[int][]int{}}
	for _, q := range s.Judged() {
		dst := train
		if isDev(q) {
			dst = dev
		}
		dst.Queries = append(dst.Queries, q)
		dst.Relevant[q] = s.Relevant[q]
		if sc, ok := s.Scene[q]; ok {
			if dst.Scene == nil {
				dst.Scene = map[int]int{}
			}
			dst.Scene[q] = sc
		}
	}
	return train, dev
}

// Fingerprint is a stable SHA-256 over tools, queries, qrels and scenes, and the held-out-tool
// view (Holdout) when d is one. Checkpoints store it so a run is never resumed or evaluated
// on different data by mistake.
func (d *Dataset) Fingerprint() string {
	h := sha256.New()
	w := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	if d.Holdout != nil {
		w(fmt.Sprintf("holdout:%g:%d", d.Holdout.Fraction, d.Holdout.Seed))
	}
	for _, t := range d.Tools {
		w(t.ID)
		w(t.Title)
		w(t.Text)
	}
	for _, q := range d.Queries {
		w(q.ID)
		w(q.Text)
	}
	for _, name := range d.SplitNames() {
		s := d.Splits[name]
		w("split:" + name)
		for _, q := range s.Queries {
			w(d.Queries[q].ID)
			for _, t := range s.Relevant[q] {
				w(d.Tools[t].ID)
			}
			if sc, ok := s.Scene[q]; ok {
				w("scene:" + d.SceneIDs[sc])
			}
		}
	}
	for i, sc := range d.Scenes {
		w("scene:" + d.SceneIDs[i])
		for _, t := range sc {
			w(d.Tools[t].ID)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Groups returns the hierarchy level above the API: the distinct group names (sorted) and,
// per tool, the index of its group. In ToolLens a group is a tool_name within its category.
func (d *Dataset) Groups() (names []string, toolGroup []int) {
	set := map[string]bool{}
	for _, t := range d.Tools {
		set[t.Group()] = true
	}
	for g := range set {
		names = append(names, g)
	}
	sort.Strings(names)
	idx := make(map[string]int, len(names))
	for i, g := range names {
		idx[g] = i
	}
	toolGroup = make([]int, len(d.Tools))
	for i, t := range d.Tools {
		toolGroup[i] = idx[t.Group()]
	}
	return names, toolGroup
}

// Stats summarises a dataset for logs and READMEs.
func (d *Dataset) Stats() string {
	var b strings.Builder
	groups, _ := d.Groups()
	fmt.Fprintf(&b, "%s: %d tools (%d groups), %d queries, %d scenes", d.Name, len(d.Tools), len(groups), len(d.Queries), len(d.Scenes))
	for _, n := range d.SplitNames() {
		s := d.Splits[n]
		fmt.Fprintf(&b, "; %s %d queries / %d pairs", n, len(s.Judged()), len(s.Pairs()))
	}
	return b.String()
}

// libraryDevTools draws frac of the tools relevant to the queries qs of s (one library's),
// with seed, for the library's dev split.
func libraryDevTools(s *Split, qs []int, frac float64, seed int64, lib int) (map[int]bool, error) {
	tools := map[int]bool{}
	for _, q := range qs {
		for _, t := range s.Relevant[q] {
			tools[t] = true
		}
	}
	return drawTools(tools, frac, seed, devToolStream+uint64(lib))
}
