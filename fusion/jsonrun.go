package fusion

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// JSON runs are ranx's run files (Run.from_file / Run.save with a .json path): one object
// mapping each query id to an object of document id to score,
//
//	{"q1": {"tool-a": 12.5, "tool b": 11}, "q2": {...}}
//
// Unlike TREC runs, ids may hold white space (toolmix's "gorilla_apizoo/Zoom API/..."). A
// path ending in ".json" is written and read in this format by WriteRunFile and ReadRunFile.

// IsJSONRun reports whether path names a JSON run (it ends in ".json").
func IsJSONRun(path string) bool {
	return len(path) > 5 && path[len(path)-5:] == ".json"
}

// WriteJSONRun writes results as a JSON run: queries in order, each query's documents best
// first, scores in the shortest form that reads back to the same float32. Ids must be
// non-empty and unique within their object, scores finite and non-increasing with rank.
func WriteJSONRun(w io.Writer, results []Result) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{")
	seen := make(map[string]bool, len(results))
	for i, r := range results {
		if r.Query == "" {
			return errors.New("json run: an empty query id")
		}
		if seen[r.Query] {
			return fmt.Errorf("json run: query %q twice", r.Query)
		}
		seen[r.Query] = true
		if len(r.Scores) != len(r.Docs) {
			return fmt.Errorf("json run: query %q: %d scores for %d documents", r.Query, len(r.Scores), len(r.Docs))
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
		writeJSONString(bw, r.Query)
		bw.WriteString(": {")
		docs := make(map[string]bool, len(r.Docs))
		for j, d := range r.Docs {
			s := r.Scores[j]
			switch {
			case d == "":
				return fmt.Errorf("json run: query %q: an empty document id at rank %d", r.Query, j+1)
			case docs[d]:
				return fmt.Errorf("json run: query %q: document %q twice", r.Query, d)
			case math.IsNaN(float64(s)) || math.IsInf(float64(s), 0):
				return fmt.Errorf("json run: query %q: document %q: score %v: want a finite number", r.Query, d, s)
			case j > 0 && s > r.Scores[j-1]:
				return fmt.Errorf("json run: query %q: score %v at rank %d is above %v at rank %d: readers order by score", r.Query, s, j+1, r.Scores[j-1], j)
			}
			docs[d] = true
			if j > 0 {
				bw.WriteString(", ")
			}
			writeJSONString(bw, d)
			bw.WriteString(": ")
			bw.WriteString(strconv.FormatFloat(float64(s), 'g', -1, 32))
		}
		bw.WriteString("}")
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

func writeJSONString(w *bufio.Writer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	w.Write(b)
}

// ReadJSONRun reads a JSON run (name names it in errors, with the line of the fault): each
// query's documents ordered by score, best first, documents of equal score in file order.
// A query or a document listed twice in one object, a score that is not a number, or any
// other shape is an error. Results are in file order.
func ReadJSONRun(r io.Reader, name string) ([]Result, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineAt(b, dec.InputOffset()), fmt.Sprintf(format, a...))
	}
	token := func() (json.Token, error) {
		t, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fail("%v", err)
		}
		return t, nil
	}
	open := func(what string) error {
		t, err := token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); !ok || d != '{' {
			return fail("%s: want an object, got %v", what, t)
		}
		return nil
	}
	if err := open("the run"); err != nil {
		return nil, err
	}
	var out []Result
	queries := map[string]bool{}
	for dec.More() {
		t, err := token()
		if err != nil {
			return nil, err
		}
		q, ok := t.(string) // an object's keys are strings; checked, so that no input can panic
		if !ok {
			return nil, fail("a query id: want a string, got %v", t)
		}
		if q == "" {
			return nil, fail("an empty query id")
		}
		if queries[q] {
			return nil, fail("query %q again", q)
		}
		queries[q] = true
		if err := open(fmt.Sprintf("query %q", q)); err != nil {
			return nil, err
		}
		res := Result{Query: q}
		docs := map[string]bool{}
		for dec.More() {
			t, err := token()
			if err != nil {
				return nil, err
			}
			d, ok := t.(string)
			if !ok {
				return nil, fail("query %q: a document id: want a string, got %v", q, t)
			}
			if d == "" {
				return nil, fail("query %q: an empty document id", q)
			}
			if docs[d] {
				return nil, fail("query %q: document %q again", q, d)
			}
			docs[d] = true
			v, err := token()
			if err != nil {
				return nil, err
			}
			n, ok := v.(json.Number)
			if !ok {
				return nil, fail("query %q: document %q: score %v: want a number", q, d, v)
			}
			s, perr := strconv.ParseFloat(string(n), 32)
			if perr != nil && !isRange(perr) {
				return nil, fail("query %q: document %q: score %s: want a number", q, d, n)
			}
			res.Docs = append(res.Docs, d)
			res.Scores = append(res.Scores, float32(s))
		}
		if _, err := token(); err != nil { // the query's closing brace
			return nil, err
		}
		sort.Stable(byScore(res))
		out = append(out, res)
	}
	if _, err := token(); err != nil { // the run's closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail("data after the run's object")
	}
	return out, nil
}

// byScore sorts a Result's documents by score, highest first.
type byScore Result

func (r byScore) Len() int           { return len(r.Docs) }
func (r byScore) Less(i, j int) bool { return r.Scores[i] > r.Scores[j] }
func (r byScore) Swap(i, j int) {
	r.Docs[i], r.Docs[j] = r.Docs[j], r.Docs[i]
	r.Scores[i], r.Scores[j] = r.Scores[j], r.Scores[i]
}

// lineAt returns the 1-based line of byte offset off in b.
func lineAt(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}
