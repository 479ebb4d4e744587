package rerank

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/toolret/toolret/rank"
)

// A query that states several needs ("book a flight to Paris, then find a hotel near the
// venue") embeds as one vector that sits between its needs' tools. Clauses ranks the whole
// query and each clause SplitClauses finds in it with the same ranker, and merges the lists
// so that every need's best tools reach the top (eval -clauses).

// Merge is how Clauses combines the whole query's ranking with its clauses' rankings.
type Merge string

// Merge rules. Each list is the top Depth of one ranking: the whole query's (q) or one
// clause's (c); n_l(t) is list l's score of tool t normalised over the list by ClauseOptions.Norm
// (Normalize: min-max, z-score, or the raw scores), a tool missing from a list gets the
// list's lowest normalised score, and r_l(t) is t's 1-based rank in list l.
const (
	// MergeMax: s(t) = max(n_q(t), max_c n_c(t)): each tool keeps its best score over the
	// whole query and the clauses.
	MergeMax Merge = "max"
	// MergeMix: s(t) = w·n_q(t) + (1−w)·max_c n_c(t), w = ClauseOptions.Whole: the whole
	// query's score plus the tool's best clause score.
	MergeMix Merge = "mix"
	// MergeRRF: s(t) = w/(K + r_q(t)) + (1−w)·max_c 1/(K + r_c(t)), K = 60 and w =
	// ClauseOptions.Whole (a list that misses t adds 0): reciprocal-rank fusion with each
	// tool's best clause rank, so that every clause's first tools rank high.
	MergeRRF Merge = "rrf"
)

// Defaults of ClauseOptions.
const (
	DefaultClauseMinWords = 3
	DefaultClauseDepth    = 100
	DefaultClauseMerge    = MergeMax
	DefaultClauseNorm     = NormZScore
	DefaultClauseWhole    = 0.5
	// ClauseRRFK is MergeRRF's constant K (as fusion.DefaultK).
	ClauseRRFK = 60
)

// ClauseOptions configure Clauses; the zero value of a field is its default.
type ClauseOptions struct {
	// MinWords: a clause of fewer words is merged into its neighbour (SplitClauses);
	// 0: DefaultClauseMinWords.
	MinWords int
	// Merge is the merge rule ("": DefaultClauseMerge).
	Merge Merge
	// Norm normalises each list's scores for MergeMax and MergeMix: NormZScore,
	// NormMinMax, or "off" for the ranker's raw scores ("": DefaultClauseNorm).
	// MergeRRF uses ranks only.
	Norm Norm
	// Whole is the whole query's weight w in (0, 1] of MergeMix and MergeRRF
	// (0: DefaultClauseWhole).
	Whole float64
	// Depth is how many tools of each ranking are merged (0: DefaultClauseDepth). A ranking
	// asked for more tools (k <= 0, or k > Depth) continues after the merged tools with the
	// rest of the whole query's ranking, in its order.
	Depth int
}

// withDefaults returns o with its zero fields set to their defaults, or an error for a value
// out of range.
func (o ClauseOptions) withDefaults() (ClauseOptions, error) {
	if o.MinWords == 0 {
		o.MinWords = DefaultClauseMinWords
	}
	if o.Merge == "" {
		o.Merge = DefaultClauseMerge
	}
	if o.Norm == "" {
		o.Norm = DefaultClauseNorm
	}
	if o.Whole == 0 {
		o.Whole = DefaultClauseWhole
	}
	if o.Depth == 0 {
		o.Depth = DefaultClauseDepth
	}
	switch {
	case o.MinWords < 0:
		return o, fmt.Errorf("clauses: MinWords %d: want >= 0", o.MinWords)
	case o.Depth < 0:
		return o, fmt.Errorf("clauses: Depth %d: want >= 0", o.Depth)
	case !(o.Whole > 0 && o.Whole <= 1):
		return o, fmt.Errorf("clauses: whole-query weight %v: want (0, 1]", o.Whole)
	}
	switch o.Merge {
	case MergeMax, MergeMix, MergeRRF:
	default:
		return o, fmt.Errorf("clauses: merge %q: want max, mix or rrf", o.Merge)
	}
	switch o.Norm {
	case NormMinMax, NormZScore, "off":
	default:
		return o, fmt.Errorf("clauses: normalisation %q: want zscore, minmax or off", o.Norm)
	}
	return o, nil
}

// Check reports whether o's values are in range.
func (o ClauseOptions) Check() error {
	_, err := o.withDefaults()
	return err
}

// String describes o: "clauses max zscore", with the whole query's weight of mix and rrf, and
// the minimum clause length and depth when they are not the defaults.
func (o ClauseOptions) String() string {
	o, _ = o.withDefaults()
	s := "clauses " + string(o.Merge)
	if o.Merge != MergeRRF {
		s += " " + string(o.Norm)
	}
	if o.Merge != MergeMax {
		s += fmt.Sprintf(" whole %g", o.Whole)
	}
	if o.MinWords != DefaultClauseMinWords {
		s += fmt.Sprintf(" min %d words", o.MinWords)
	}
	if o.Depth != DefaultClauseDepth {
		s += fmt.Sprintf(" depth %d", o.Depth)
	}
	return s
}

// Clauses is a rank.QueryRanker that ranks each query whole and clause by clause with Inner and
// merges the rankings (ClauseOptions.Merge). A query of one clause is Inner's ranking as it
// is. The texts of a call go to Inner in one call, whole queries and clauses, or in two when
// the whole queries are asked for more than Depth tools (the clauses are ranked to Depth, so an
// Inner whose top Depth depends on the depth asked, such as a fusion normalising its lists,
// ranks them as it does for k <= Depth, as a server asking for 10 tools gets); a clause is
// passed with its query's Index, so Inner must rank by Text (a ranker that ranks from inputs
// computed per query index, such as rank.Fixed, ranks every clause as the whole query).
type Clauses struct {
	Inner rank.QueryRanker
	ClauseOptions
}

// WithClauses returns r wrapped in Clauses with options o, a rank.QueryTokenizer when r is one.
func WithClauses(r rank.QueryRanker, o ClauseOptions) (rank.QueryRanker, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	c := &Clauses{Inner: r, ClauseOptions: o}
	t, tok := r.(rank.QueryTokenizer)
	_, lib := r.(withinLibraries)
	switch {
	case tok && lib:
		return clausesLibraryTokens{clausesTokens{c, t}}, nil
	case tok:
		return clausesTokens{c, t}, nil
	case lib:
		return clausesLibrary{c}, nil
	}
	return c, nil
}

// withinLibraries is implemented by a ranker that ranks each query from its own library's
// tools (metrics.LibraryRanker). Clauses over one ranks every clause within its query's
// library too (a clause carries its query's Index) and says so, so that an evaluation asks
// it for the top k, as a server does.
type withinLibraries interface{ RanksWithinLibraries() }

type clausesLibrary struct{ *Clauses }

// RanksWithinLibraries implements metrics.LibraryRanker.
func (clausesLibrary) RanksWithinLibraries() {}

type clausesLibraryTokens struct{ clausesTokens }

// RanksWithinLibraries implements metrics.LibraryRanker.
func (clausesLibraryTokens) RanksWithinLibraries() {}

type clausesTokens struct {
	*Clauses
	t rank.QueryTokenizer
}

// QueryTokens implements rank.QueryTokenizer: the whole query's count.
func (c clausesTokens) QueryTokens(text string) (int, int) { return c.t.QueryTokens(text) }

// RankQueries implements rank.QueryRanker.
func (c *Clauses) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	o, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	all := append([]rank.Query(nil), qs...)
	first := make([]int, len(qs)) // first[i]: the index in all of query i's first clause
	clauses := make([]int, len(qs))
	for i, q := range qs {
		cl := SplitClauses(q.Text, o.MinWords)
		first[i] = len(all)
		if len(cl) > 1 {
			clauses[i] = len(cl)
			for _, t := range cl {
				all = append(all, rank.Query{Index: q.Index, Text: t})
			}
		}
	}
	// The whole queries are ranked to the depth asked (k <= 0: every tool), the clauses only
	// to o.Depth, all MergeClauses reads of them: one call when the depths agree, else two.
	depth := 0
	if k > 0 {
		depth = max(k, o.Depth)
	}
	var rs []rank.Ranking
	if depth == o.Depth || len(all) == len(qs) {
		rs, err = c.Inner.RankQueries(ctx, all, depth)
	} else if rs, err = c.Inner.RankQueries(ctx, qs, depth); err == nil && len(rs) == len(qs) {
		var cl []rank.Ranking
		cl, err = c.Inner.RankQueries(ctx, all[len(qs):], o.Depth)
		rs = append(rs, cl...)
	}
	if err != nil {
		return nil, err
	}
	if len(rs) != len(all) {
		return nil, fmt.Errorf("clauses: the ranker returned %d rankings for %d texts", len(rs), len(all))
	}
	out := make([]rank.Ranking, len(qs))
	for i := range qs {
		if clauses[i] == 0 {
			out[i] = cut(rs[i], k)
			continue
		}
		m, err := MergeClauses(rs[i], rs[first[i]:first[i]+clauses[i]], o)
		if err != nil {
			return nil, fmt.Errorf("clauses: query %d: %w", qs[i].Index, err)
		}
		out[i] = cut(m, k)
	}
	return out, nil
}

func cut(r rank.Ranking, k int) rank.Ranking {
	if k > 0 && len(r.Tools) > k {
		r.Tools = r.Tools[:k]
		if r.Scores != nil {
			r.Scores = r.Scores[:k]
		}
	}
	return r
}

// MergeClauses merges the whole query's ranking with its clauses' rankings by o's rule: the
// tools of the first o.Depth of every ranking, by merged score (ties to the whole query's
// better rank, then the lower tool index), then the rest of whole in its order with scores
// below the merged ones. Rankings are best first; MergeMax and MergeMix need their scores.
func MergeClauses(whole rank.Ranking, clauses []rank.Ranking, o ClauseOptions) (rank.Ranking, error) {
	o, err := o.withDefaults()
	if err != nil {
		return rank.Ranking{}, err
	}
	lists := append([]rank.Ranking{whole}, clauses...)
	for i := range lists {
		lists[i] = cut(lists[i], o.Depth)
		if o.Merge != MergeRRF {
			if len(lists[i].Scores) != len(lists[i].Tools) {
				return rank.Ranking{}, fmt.Errorf("merge %s: ranking %d has %d scores for %d tools (rrf needs none)", o.Merge, i, len(lists[i].Scores), len(lists[i].Tools))
			}
		}
	}
	// score[l][t]: list l's contribution for tool t; floor[l]: a missing tool's.
	score := make([]map[int]float64, len(lists))
	floor := make([]float64, len(lists))
	for l, r := range lists {
		score[l] = make(map[int]float64, len(r.Tools))
		var ns []float32
		if o.Merge != MergeRRF {
			ns = r.Scores
			if o.Norm != "off" {
				ns = Normalize(r.Scores, o.Norm)
			}
			floor[l] = math.Inf(1)
			for _, v := range ns {
				floor[l] = min(floor[l], float64(v))
			}
			if len(ns) == 0 {
				floor[l] = 0
			}
		}
		for j, t := range r.Tools {
			if _, dup := score[l][t]; dup {
				continue // its best-ranked occurrence counts
			}
			if o.Merge == MergeRRF {
				score[l][t] = 1 / float64(ClauseRRFK+j+1)
			} else {
				score[l][t] = float64(ns[j])
			}
		}
	}
	get := func(l, t int) float64 {
		if v, ok := score[l][t]; ok {
			return v
		}
		return floor[l]
	}
	wholeRank := make(map[int]int, len(whole.Tools))
	for j, t := range whole.Tools {
		if _, ok := wholeRank[t]; !ok {
			wholeRank[t] = j
		}
	}
	merged := map[int]float64{}
	for l := range lists {
		for t := range score[l] {
			if _, ok := merged[t]; ok {
				continue
			}
			best := math.Inf(-1)
			for c := 1; c < len(lists); c++ {
				best = max(best, get(c, t))
			}
			var s float64
			switch o.Merge {
			case MergeMax:
				s = max(get(0, t), best)
			case MergeMix, MergeRRF:
				s = o.Whole*get(0, t) + (1-o.Whole)*best
			}
			merged[t] = s
		}
	}
	tools := make([]int, 0, len(merged))
	for t := range merged {
		tools = append(tools, t)
	}
	rankOf := func(t int) int {
		if r, ok := wholeRank[t]; ok {
			return r
		}
		return math.MaxInt
	}
	sort.Slice(tools, func(a, b int) bool {
		ta, tb := tools[a], tools[b]
		if sa, sb := merged[ta], merged[tb]; sa != sb {
			return sa > sb
		}
		if ra, rb := rankOf(ta), rankOf(tb); ra != rb {
			return ra < rb
		}
		return ta < tb
	})
	out := rank.Ranking{Tools: tools, Scores: make([]float32, len(tools))}
	lo := float32(0)
	for i, t := range tools {
		out.Scores[i] = float32(merged[t])
		if i == 0 || out.Scores[i] < lo {
			lo = out.Scores[i]
		}
	}
	for _, t := range whole.Tools[len(lists[0].Tools):] {
		if _, ok := merged[t]; !ok {
			merged[t] = 0
			out.Tools = append(out.Tools, t)
			out.Scores = append(out.Scores, lo-1)
		}
	}
	return out, nil
}

// SplitClauses splits a query into the needs it states, in order, each clause a piece of the
// query's text, trimmed. It cuts
//   - at line breaks and after ";";
//   - after a sentence's end: ".", "!" or "?" followed by a space, unless the word ending in
//     "." is a single letter, a common abbreviation (e.g., i.e., etc., vs., Mr., Dr., No.,
//     ...), a word with an inner "." (3.5, example.com), or a number that starts its clause
//     (a list's "1.") or is not followed by a capitalised word;
//   - before the connectives "and then", "then", "after that", "afterwards", "and also" (the
//     connective dropped), before "and" followed by an action verb of a fixed list (find, get,
//     send, book, ...) or by a new request (I, I'd, I'll, we, please, can, could; "and"
//     dropped), before ", also" followed by such a verb ("also" dropped) and before a verb of
//     the list that follows a comma (", translate it", the verb kept; not after a leading
//     "Also," or "Then,").
//
// A leading "first", "next", "finally", "also", "then" (and a few such words) of a clause is
// dropped. A clause of fewer than minWords words (white-space separated) is merged into the
// clause before it (the first clause into the one after it), connective included, until none
// is left or one clause remains. A query with no cut returns one clause, the trimmed query;
// an empty query none. minWords <= 1 merges only empty clauses.
func SplitClauses(q string, minWords int) []string {
	type word struct {
		start, end int    // byte offsets in q
		bare       string // lower-cased, without surrounding punctuation
	}
	var words []word
	for i := 0; i < len(q); {
		for i < len(q) && isSpace(q[i]) {
			i++
		}
		if i == len(q) {
			break
		}
		j := i
		for j < len(q) && !isSpace(q[j]) {
			j++
		}
		words = append(words, word{i, j, bare(q[i:j])})
		i = j
	}
	if len(words) == 0 {
		return nil
	}
	type span struct{ start, text, end int } // clause q[text:end]; start: incl. connective
	var spans []span
	cur := span{0, words[0].start, 0}
	for i := 1; i < len(words); i++ {
		prev, wd := q[words[i-1].start:words[i-1].end], words[i]
		next := ""
		if i+1 < len(words) {
			next = words[i+1].bare
		}
		cutHere, drop := false, 0
		switch {
		case strings.ContainsAny(q[words[i-1].end:wd.start], "\n\r"),
			strings.HasSuffix(prev, ";"),
			sentenceEnd(prev, q[wd.start:wd.end], i-1 == 0 || q[cur.text:words[i-1].start] == ""):
			cutHere = true
		case wd.bare == "and" && (next == "then" || next == "also"):
			cutHere, drop = true, 2
		case wd.bare == "and" && (actionVerbs[next] || starters[next]):
			cutHere, drop = true, 1
		case wd.bare == "then" || wd.bare == "afterwards" || wd.bare == "afterward":
			cutHere, drop = true, 1
		case wd.bare == "after" && next == "that":
			cutHere, drop = true, 2
		case wd.bare == "also" && actionVerbs[next] && strings.HasSuffix(prev, ","):
			cutHere, drop = true, 1
		case strings.HasSuffix(prev, ",") && actionVerbs[wd.bare] && !lead(words[i-1].bare):
			cutHere = true
		}
		if !cutHere {
			continue
		}
		cur.end = words[i-1].end
		spans = append(spans, cur)
		cur = span{wd.start, len(q), 0} // the connective ends the query: an empty clause
		if i+drop < len(words) {
			cur.text = words[i+drop].start
		}
		i += drop
	}
	cur.end = len(q)
	spans = append(spans, cur)
	text := func(s span) string {
		if s.text >= s.end {
			return ""
		}
		t := trimClause(q[s.text:s.end])
		for {
			f := strings.Fields(t)
			if len(f) < 2 || !lead(bare(f[0])) {
				return t
			}
			t = trimClause(strings.TrimSpace(t[strings.Index(t, f[0])+len(f[0]):]))
		}
	}
	count := func(s span) int { return len(strings.Fields(text(s))) }
	for len(spans) > 1 {
		short := -1
		for i, s := range spans {
			if n := count(s); n < max(minWords, 1) {
				short = i
				break
			}
		}
		if short < 0 {
			break
		}
		if short == 0 {
			spans[1] = span{spans[0].start, spans[0].text, spans[1].end}
			spans = spans[1:]
		} else {
			spans[short-1].end = spans[short].end
			spans = append(spans[:short], spans[short+1:]...)
		}
	}
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		if t := text(s); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// bare lower-cases w and strips the punctuation around it ("Then," -> "then").
func bare(w string) string {
	return strings.ToLower(strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }))
}

// trimClause trims spaces and the punctuation a cut leaves at a clause's ends.
func trimClause(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, ",;: ")
	return strings.TrimRight(s, ",;: ")
}

// lead reports whether a clause's first word is a sequencing word SplitClauses drops.
func lead(w string) bool {
	switch w {
	case "first", "firstly", "next", "finally", "lastly", "also", "then", "and", "additionally", "afterwards":
		return true
	}
	return false
}

// sentenceEnd reports whether word w, followed by word next, ends a sentence: it ends in
// ".", "!" or "?" (then perhaps quotes or brackets), and is not an abbreviation, a single
// letter, nor a number unless next is capitalised and w does not start its clause (first: a
// list's "1.").
func sentenceEnd(w, next string, first bool) bool {
	t := strings.TrimRight(w, "\"')]”’")
	if t == "" {
		return false
	}
	switch t[len(t)-1] {
	case '!', '?':
		return true
	case '.':
	default:
		return false
	}
	core := strings.ToLower(strings.TrimLeft(strings.TrimRight(t, "."), "\"'([“‘"))
	if abbreviations[core] || len([]rune(core)) <= 1 {
		return false
	}
	if strings.Contains(core, ".") { // e.g, i.e, U.S, 3.5, example.com
		return false
	}
	for _, r := range core {
		if !unicode.IsDigit(r) && r != ',' {
			return true
		}
	}
	// A number: "on August 1, 2024. Find ..." ends a sentence, "1. Find" starts a list item.
	return !first && next != "" && unicode.IsUpper([]rune(next)[0])
}

var abbreviations = set("mr", "mrs", "ms", "dr", "prof", "st", "no", "vs", "etc", "approx", "inc", "ltd", "co", "jr", "sr", "fig", "dept", "est", "ave", "rd", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "min", "max", "e.g", "i.e")

// actionVerbs are the imperative verbs that start a new need after "and", "also" or a comma.
var actionVerbs = set("add", "analyze", "analyse", "apply", "archive", "assign", "book", "buy", "calculate", "cancel",
	"change", "check", "compare", "compute", "confirm", "convert", "count", "create", "delete", "describe", "detect",
	"download", "draft", "email", "estimate", "evaluate", "exchange", "extract", "fetch", "filter", "find", "forward",
	"generate", "get", "give", "identify", "let", "list", "locate", "look", "make", "modify", "move", "notify", "order",
	"play", "post", "predict", "provide", "recommend", "register", "remind", "remove", "rename", "reply", "report",
	"request", "reserve", "reset", "retrieve", "return", "review", "save", "schedule", "search", "send", "set", "share",
	"show", "sort", "submit", "suggest", "summarize", "summarise", "tell", "track", "transfer", "translate", "update",
	"upload", "validate", "verify", "write")

// starters begin a new request after "and".
var starters = set("i", "i'd", "i'll", "we", "please", "can", "could")

func set(w ...string) map[string]bool {
	m := make(map[string]bool, len(w))
	for _, x := range w {
		m[x] = true
	}
	return m
}
