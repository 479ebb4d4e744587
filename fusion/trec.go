package fusion

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/toolret/toolret/internal/atomicfile"
)

// Result is one query's ranked documents in a TREC run: ids best first with their scores.
type Result struct {
	Query  string
	Docs   []string
	Scores []float32
}

// WriteRun writes results in TREC run format, one line per document:
//
//	qid Q0 docid rank score tag
//
// with ranks 1-based and scores in the shortest form that reads back to the same float32.
// Tools that read runs (trec_eval, pytrec_eval, ranx) order a query's documents by score, so
// scores must not increase with rank; ids and tag must be non-empty without white space.
func WriteRun(w io.Writer, tag string, results []Result) error {
	if err := checkToken("tag", tag); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, r := range results {
		if err := checkToken("query id", r.Query); err != nil {
			return err
		}
		if len(r.Scores) != len(r.Docs) {
			return fmt.Errorf("trec run: query %q: %d scores for %d documents", r.Query, len(r.Scores), len(r.Docs))
		}
		for i, d := range r.Docs {
			if err := checkToken("document id", d); err != nil {
				return fmt.Errorf("query %q: %w", r.Query, err)
			}
			s := r.Scores[i]
			if math.IsNaN(float64(s)) {
				return fmt.Errorf("trec run: query %q: document %q: score NaN", r.Query, d)
			}
			if i > 0 && s > r.Scores[i-1] {
				return fmt.Errorf("trec run: query %q: score %v at rank %d is above %v at rank %d: readers order by score", r.Query, s, i+1, r.Scores[i-1], i)
			}
			fmt.Fprintf(bw, "%s Q0 %s %d %s %s\n", r.Query, d, i+1, strconv.FormatFloat(float64(s), 'g', -1, 32), tag)
		}
	}
	return bw.Flush()
}

// WriteRunFile writes results to path atomically: a TREC run tagged tag (WriteRun), or a
// JSON run when path ends in ".json" (WriteJSONRun: ids may hold white space; no tag).
func WriteRunFile(path, tag string, results []Result) error {
	var b bytes.Buffer
	if IsJSONRun(path) {
		if err := WriteJSONRun(&b, results); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if err := WriteRun(&b, tag, results); err != nil {
		if errors.Is(err, errWhiteSpace) {
			return fmt.Errorf("%s: %w (name the file *.json to write ranx's JSON run, whose ids may hold white space)", path, err)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.Write(path, b.Bytes())
}

// errWhiteSpace is checkToken's error: a TREC id or tag that is empty or holds white space.
var errWhiteSpace = errors.New("want a non-empty id without white space")

func checkToken(what, s string) error {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' }) {
		return fmt.Errorf("trec run: %s %q: %w", what, s, errWhiteSpace)
	}
	return nil
}

// ReadRun reads a TREC run (name names it in errors): lines of six fields separated by any
// white space (qid, an ignored field such as Q0, docid, rank, score, tag); blank lines are
// skipped. A query's lines may be anywhere in the file and in any order: its documents are
// ordered by rank, which must be a non-negative integer, unique within the query, and agree
// with the scores (no score above that of a smaller rank). A document listed twice for one
// query, or a malformed line, is an error naming name:line. Results are in order of each
// query's first line.
func ReadRun(r io.Reader, name string) ([]Result, error) {
	type entry struct {
		doc   string
		rank  int
		score float32
		line  int
	}
	var order []string
	byQuery := map[string][]entry{}
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		text, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if f := strings.Fields(text); len(f) > 0 {
			if len(f) != 6 {
				return nil, fmt.Errorf("%s:%d: want 6 fields (qid Q0 docid rank score tag), got %d", name, n, len(f))
			}
			rank, perr := strconv.Atoi(f[3])
			if perr != nil || rank < 0 {
				return nil, fmt.Errorf("%s:%d: rank %q: want a non-negative integer", name, n, f[3])
			}
			score, perr := strconv.ParseFloat(f[4], 32)
			if perr != nil && !isRange(perr) || math.IsNaN(score) {
				return nil, fmt.Errorf("%s:%d: score %q: want a number", name, n, f[4])
			}
			q := f[0]
			if _, ok := byQuery[q]; !ok {
				order = append(order, q)
			}
			byQuery[q] = append(byQuery[q], entry{doc: f[2], rank: rank, score: float32(score), line: n})
		}
		if err == io.EOF {
			break
		}
	}
	out := make([]Result, len(order))
	for i, q := range order {
		es := byQuery[q]
		sort.SliceStable(es, func(a, b int) bool { return es[a].rank < es[b].rank })
		res := Result{Query: q, Docs: make([]string, len(es)), Scores: make([]float32, len(es))}
		at := make(map[string]int, len(es))
		for j, e := range es {
			if prev, ok := at[e.doc]; ok {
				return nil, fmt.Errorf("%s:%d: query %q: document %q again (first at line %d)", name, e.line, q, e.doc, prev)
			}
			at[e.doc] = e.line
			if j > 0 {
				p := es[j-1]
				if p.rank == e.rank {
					return nil, fmt.Errorf("%s:%d: query %q: rank %d again (first at line %d)", name, e.line, q, e.rank, p.line)
				}
				if e.score > p.score {
					return nil, fmt.Errorf("%s:%d: query %q: score %v at rank %d is above %v at rank %d (line %d): ranks and scores disagree", name, e.line, q, e.score, e.rank, p.score, p.rank, p.line)
				}
			}
			res.Docs[j], res.Scores[j] = e.doc, e.score
		}
		out[i] = res
	}
	return out, nil
}

// isRange reports a strconv range error: a score beyond float32 reads as ±Inf.
func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// ReadRunFile reads the TREC run at path (ReadRun), or the JSON run when path ends in
// ".json" (ReadJSONRun).
func ReadRunFile(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if IsJSONRun(path) {
		return ReadJSONRun(f, path)
	}
	return ReadRun(f, path)
}
