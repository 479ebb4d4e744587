// Package usage reads the usage log a tool gateway writes (package gateway: every search,
// call and report_result, one JSON line each) and turns it into training examples for a
// retriever (data.Example; train biencoder -usage LOG), so that a deployment gets better with
// use:
//
//   - a search's query is the example's query;
//   - a tool the agent called from that search with outcome "ok", or reported a success on
//     (report_result, POST /v1/feedback), is a positive;
//   - a failed call (tool_error, invalid_arguments, unknown_tool, error) is not a positive,
//     and its tool is not a negative either (the arguments, not the tool, may have been
//     wrong); a reported failure takes the tool out of the positives and makes it a negative;
//   - the tools the search showed that were neither called nor reported on are hard
//     negatives;
//   - a search with no positive gives no example (the agent found nothing, or gave up: the
//     log cannot tell which shown tool, if any, would have served);
//   - calls and reports are joined to their search by search_id; one naming no search the
//     log holds (or none) is counted, not used, unless a report gives its query itself;
//   - searches with the same query (compared without case and extra white space) are merged
//     into one example: positives and negatives are unions, a tool positive for any of them
//     is no negative.
package usage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolret/toolret/data"
)

// Record kinds.
const (
	KindSearch   = "search"
	KindCall     = "call"
	KindFeedback = "feedback"
)

// Outcomes of a call (OutcomeOK, or a failure) and of feedback.
const (
	OutcomeOK      = "ok"
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// Filters restrict a search to the tools of an MCP server, a namespace, and that carry
// every tag listed; empty fields do not restrict.
type Filters struct {
	Server    string   `json:"server,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

// Record is one line of the usage log: a search (the query and the tools shown), a call
// (the tool called and its outcome) or feedback on a result (report_result,
// POST /v1/feedback).
type Record struct {
	Time time.Time `json:"time"`
	// Kind is "search", "call" or "feedback".
	Kind string `json:"kind"`
	// Key is the name of the API key of the caller, if any.
	Key string `json:"key,omitempty"`
	// SearchID identifies a search; a call or feedback naming it refers to that search.
	SearchID string   `json:"search_id,omitempty"`
	Query    string   `json:"query,omitempty"`
	K        int      `json:"k,omitempty"`
	Filters  *Filters `json:"filters,omitempty"`
	// Shown are the IDs of the tools a search answered, best first.
	Shown []string `json:"shown,omitempty"`
	// Tool is the tool called or reported on.
	Tool string `json:"tool,omitempty"`
	// Outcome: for a call "ok", "tool_error" (the upstream's or the gateway's, isError),
	// "invalid_arguments" or "unknown_tool"; for feedback "success" or "failure".
	Outcome string `json:"outcome,omitempty"`
	// Detail is the start of an error or the feedback's note.
	Detail string `json:"detail,omitempty"`
	MS     int64  `json:"ms,omitempty"`
}

// Read reads the usage log at path (Decode), or, when path is a PostgreSQL URL, the usage_log
// table replicas write (ReadDB).
func Read(path string) ([]Record, []string, error) {
	if IsDatabaseURL(path) {
		return readDB(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("usage log: %w", err)
	}
	defer f.Close()
	return Decode(f, path)
}

// Decode reads a usage log from r (name names it in errors). Blank lines are skipped. A
// malformed line is an error naming name:line, except a last line with no newline at its
// end that does not parse: that is a record torn by a crash during its write, skipped with
// a warning (the gateway acknowledges a request only after its record is fsynced, so a torn
// record was never acknowledged). A record of an unknown kind, a search with no search_id
// or query, and a call or feedback naming no tool are errors naming name:line.
func Decode(r io.Reader, name string) (recs []Record, warnings []string, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, nil, fmt.Errorf("%s:%d: %w", name, n, rerr)
		}
		torn := rerr == io.EOF && len(line) > 0
		if t := bytes.TrimSpace(line); len(t) > 0 {
			rec, err := decodeLine(t)
			switch {
			case err != nil && torn:
				warnings = append(warnings, fmt.Sprintf("%s:%d: torn last record (no newline at its end) skipped: %v", name, n, err))
			case err != nil:
				return nil, nil, fmt.Errorf("%s:%d: %w", name, n, err)
			default:
				recs = append(recs, rec)
			}
		}
		if rerr == io.EOF {
			return recs, warnings, nil
		}
	}
}

func decodeLine(b []byte) (Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("malformed usage record: %w", err)
	}
	switch rec.Kind {
	case KindSearch:
		if rec.SearchID == "" || strings.TrimSpace(rec.Query) == "" {
			return rec, errors.New(`a search record needs "search_id" and "query"`)
		}
	case KindCall, KindFeedback:
		if rec.Tool == "" {
			return rec, fmt.Errorf(`a %s record needs "tool"`, rec.Kind)
		}
	default:
		return rec, fmt.Errorf(`usage record of unknown kind %q (want search, call or feedback)`, rec.Kind)
	}
	return rec, nil
}

// Stats count what Examples made of a log.
type Stats struct {
	Searches, Calls, Feedback int
	// Positives are the (search, tool) positives before merging, FailedCalls the calls
	// that failed, Failures the reported failures.
	Positives, FailedCalls, Failures int
	// Unjoined are the calls and reports that name no search of the log (and give no
	// query), Unanswered the searches with no positive.
	Unjoined, Unanswered int
	// Examples are the examples made (distinct queries), Negatives their hard negatives.
	Examples, Negatives int
}

func (s Stats) String() string {
	return fmt.Sprintf("%d searches, %d calls (%d failed), %d reports (%d failures); %d positives; %d searches without one, %d calls/reports joined to no search; %d examples (distinct queries) with %d hard negatives",
		s.Searches, s.Calls, s.FailedCalls, s.Feedback, s.Failures, s.Positives, s.Unanswered, s.Unjoined, s.Examples, s.Negatives)
}

// Examples turns usage records into training examples (Source "usage"), in the order their
// queries first appear, by the rules of the package comment.
func Examples(recs []Record) ([]data.Example, Stats) {
	var st Stats
	type search struct {
		query    string
		shown    []string
		pos, bad map[string]bool // positives; tools not to use as negatives
		neg      map[string]bool // reported failures
	}
	searches := map[string]*search{}
	var order []*search
	for _, r := range recs {
		if r.Kind != KindSearch {
			continue
		}
		st.Searches++
		if _, dup := searches[r.SearchID]; dup {
			continue
		}
		s := &search{query: r.Query, shown: r.Shown, pos: map[string]bool{}, bad: map[string]bool{}, neg: map[string]bool{}}
		searches[r.SearchID] = s
		order = append(order, s)
	}
	byQuery := map[string]*search{} // reports with a query and no search
	for _, r := range recs {
		if r.Kind == KindSearch {
			continue
		}
		if r.Kind == KindCall {
			st.Calls++
		} else {
			st.Feedback++
		}
		s := searches[r.SearchID]
		if s == nil && r.Kind == KindFeedback && strings.TrimSpace(r.Query) != "" {
			key := normalize(r.Query)
			if s = byQuery[key]; s == nil {
				s = &search{query: r.Query, pos: map[string]bool{}, bad: map[string]bool{}, neg: map[string]bool{}}
				byQuery[key] = s
				order = append(order, s)
			}
		}
		if s == nil {
			st.Unjoined++
			continue
		}
		switch {
		case r.Kind == KindCall && r.Outcome == OutcomeOK, r.Kind == KindFeedback && r.Outcome == OutcomeSuccess:
			if !s.neg[r.Tool] {
				s.pos[r.Tool] = true
			}
		case r.Kind == KindCall:
			st.FailedCalls++
			s.bad[r.Tool] = true
		default: // a reported failure overrides a successful call
			st.Failures++
			delete(s.pos, r.Tool)
			s.neg[r.Tool] = true
		}
	}
	type merged struct {
		query    string
		pos, neg []string
		notNeg   map[string]bool
	}
	var out []*merged
	index := map[string]*merged{}
	for _, s := range order {
		if len(s.pos) == 0 {
			st.Unanswered++
			continue
		}
		st.Positives += len(s.pos)
		key := normalize(s.query)
		m := index[key]
		if m == nil {
			m = &merged{query: strings.TrimSpace(s.query), notNeg: map[string]bool{}}
			index[key] = m
			out = append(out, m)
		}
		for _, t := range s.shown { // shown order: best first
			if s.pos[t] && !slices.Contains(m.pos, t) {
				m.pos = append(m.pos, t)
			}
		}
		for _, t := range sortedKeys(s.pos) { // positives not shown (reported by query)
			if !slices.Contains(m.pos, t) {
				m.pos = append(m.pos, t)
			}
		}
		for t := range s.bad {
			m.notNeg[t] = true
		}
		cand := append(slices.Clone(s.shown), sortedKeys(s.neg)...)
		for _, t := range cand {
			if !s.pos[t] && !s.bad[t] && !slices.Contains(m.neg, t) {
				m.neg = append(m.neg, t)
			}
		}
	}
	ex := make([]data.Example, 0, len(out))
	for _, m := range out {
		var neg []string
		for _, t := range m.neg {
			if !slices.Contains(m.pos, t) && !m.notNeg[t] {
				neg = append(neg, t)
			}
		}
		ex = append(ex, data.Example{Query: m.query, Positives: m.pos, Negatives: neg, Source: "usage"})
		st.Negatives += len(neg)
	}
	st.Examples = len(ex)
	return ex, st
}

// ReadExamples reads the usage log at path and returns its training examples, the
// warnings of reading it (a torn last record) and what was made of it.
func ReadExamples(path string) ([]data.Example, []string, Stats, error) {
	recs, warn, err := Read(path)
	if err != nil {
		return nil, nil, Stats{}, err
	}
	ex, st := Examples(recs)
	return ex, warn, st, nil
}

func normalize(q string) string { return strings.ToLower(strings.Join(strings.Fields(q), " ")) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
