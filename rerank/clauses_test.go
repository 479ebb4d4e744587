package rerank

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/rank"
)

func TestSplitClauses(t *testing.T) {
	for _, tc := range []struct {
		name, q  string
		minWords int
		want     []string
	}{
		{"one need", "Find flights from Paris to Rome", 3, []string{"Find flights from Paris to Rome"}},
		{"empty", "  ", 3, nil},
		{"sentences", "Check the weather in Oslo. Book a table for two tonight! Is the museum open?", 3,
			[]string{"Check the weather in Oslo.", "Book a table for two tonight!", "Is the museum open?"}},
		{"semicolon and line break", "Return the kettle; cancel order #W12 now\nsend me the receipt please", 3,
			[]string{"Return the kettle", "cancel order #W12 now", "send me the receipt please"}},
		{"and then", "Convert 5 USD to EUR and then email the result to Ada", 3,
			[]string{"Convert 5 USD to EUR", "email the result to Ada"}},
		{"comma then", "Get the GPA for grades A and B, then get a random joke", 3,
			[]string{"Get the GPA for grades A and B", "get a random joke"}},
		{"after that", "Find the lyrics of Happy after that analyze their sentiment", 3,
			[]string{"Find the lyrics of Happy", "analyze their sentiment"}},
		{"and before a verb", "Search for quotes about love and find associated books.", 3,
			[]string{"Search for quotes about love", "find associated books."}},
		{"and before a request", "Who wrote the tipping point and can you find more books by the author?", 3,
			[]string{"Who wrote the tipping point", "can you find more books by the author?"}},
		{"and between nouns stays", "Find hotels and flights for Paris and Rome", 3,
			[]string{"Find hotels and flights for Paris and Rome"}},
		{"comma before a verb", "Calculate the age of Ada, find the lyrics of Happy, and translate them to French", 3,
			[]string{"Calculate the age of Ada", "find the lyrics of Happy", "translate them to French"}},
		{"comma list stays", "Compare the prices, ratings, and reviews of these phones", 3,
			[]string{"Compare the prices, ratings, and reviews of these phones"}},
		{"leading sequencing words dropped", "First, check my calendar for Monday. Then, book a meeting room. Finally, notify the team by email.", 3,
			[]string{"check my calendar for Monday.", "book a meeting room.", "notify the team by email."}},
		{"also after a comma", "Find a flight to Lima for Friday, also book a hotel near the airport", 3,
			[]string{"Find a flight to Lima for Friday", "book a hotel near the airport"}},
		{"also inside a request stays", "Could you also give me the weather forecast for Lima?", 3,
			[]string{"Could you also give me the weather forecast for Lima?"}},
		{"abbreviations and numbers", "Email Dr. Smith about the 3.5 kg parcel, e.g. the one from Acme Inc. today", 3,
			[]string{"Email Dr. Smith about the 3.5 kg parcel, e.g. the one from Acme Inc. today"}},
		{"a year ends a sentence", "Find flights that leave on July 19, 2024. Find a hotel in Lima.", 3,
			[]string{"Find flights that leave on July 19, 2024.", "Find a hotel in Lima."}},
		{"list item number", "1. Find a hotel in Lima\n2. Book a taxi to the airport", 3,
			[]string{"1. Find a hotel in Lima", "2. Book a taxi to the airport"}},
		{"short clause merged into the one before", "Find a hotel in Lima. Thanks! Book a taxi to the airport.", 3,
			[]string{"Find a hotel in Lima. Thanks!", "Book a taxi to the airport."}},
		{"short first clause merged into the next", "Hi! Find a hotel in Lima. Book a taxi to the airport.", 3,
			[]string{"Hi! Find a hotel in Lima.", "Book a taxi to the airport."}},
		{"all short: one clause", "Hi there. Thanks!", 3, []string{"Hi there. Thanks!"}},
		{"min words 1 keeps short clauses", "Hi! Find a hotel in Lima.", 1, []string{"Hi!", "Find a hotel in Lima."}},
		{"trailing then", "Plot the visits since then", 3, []string{"Plot the visits since then"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SplitClauses(tc.q, tc.minWords)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SplitClauses(%q, %d) =\n  %q\nwant\n  %q", tc.q, tc.minWords, got, tc.want)
			}
		})
	}
}

func TestMergeClauses(t *testing.T) {
	// The whole query finds tools 1 and 2, its clauses 3 and 4: scores on different scales.
	whole := rank.Ranking{Tools: []int{1, 2, 3, 4, 5}, Scores: []float32{0.9, 0.8, 0.5, 0.4, 0.3}}
	c1 := rank.Ranking{Tools: []int{3, 1, 5}, Scores: []float32{0.7, 0.6, 0.2}}
	c2 := rank.Ranking{Tools: []int{4, 2, 6}, Scores: []float32{10, 2, 0}}
	for _, tc := range []struct {
		name string
		o    ClauseOptions
		want []int
	}{
		// minmax: whole 1, .83, .33, .17, 0; c1 3:1, 1:.8, 5:0; c2 4:1, 2:.2, 6:0.
		{"max minmax", ClauseOptions{Merge: MergeMax, Norm: NormMinMax}, []int{1, 3, 4, 2, 5, 6}},
		// raw: 4 (10) first, 2 (2), then 1 (.9), 3 (.7), 5 (.3), 6 (0).
		{"max raw", ClauseOptions{Merge: MergeMax, Norm: "off"}, []int{4, 2, 1, 3, 5, 6}},
		// w .5: 1: .5+.4=.9, 2: .42+.1=.52, 3: .17+.5=.67, 4: .08+.5=.58, 5: 0, 6: 0 (whole's
		// floor 0 + .5·max(c1 floor 0, 0)).
		{"mix minmax .5", ClauseOptions{Merge: MergeMix, Norm: NormMinMax, Whole: 0.5}, []int{1, 3, 4, 2, 5, 6}},
		// w .9: the whole query dominates: 1, 2, 3, 4, 5, 6.
		{"mix minmax .9", ClauseOptions{Merge: MergeMix, Norm: NormMinMax, Whole: 0.9}, []int{1, 2, 3, 4, 5, 6}},
		// rrf w .5: 1: .5/61+.5/62, 3: .5/63+.5/61, 2: .5/62+.5/62, 4: .5/64+.5/61, 5:
		// .5/65+.5/63, 6: .5/63.
		{"rrf .5", ClauseOptions{Merge: MergeRRF, Whole: 0.5}, []int{1, 3, 2, 4, 5, 6}},
		// depth 1: only 1, 3 and 4 merged, then the rest of the whole query's ranking.
		{"depth 1", ClauseOptions{Merge: MergeMax, Norm: NormMinMax, Depth: 1}, []int{1, 3, 4, 2, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergeClauses(whole, []rank.Ranking{c1, c2}, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Tools, tc.want) {
				t.Errorf("tools %v (scores %v), want %v", got.Tools, got.Scores, tc.want)
			}
			for i := 1; i < len(got.Scores); i++ {
				if got.Scores[i] > got.Scores[i-1] || math.IsNaN(float64(got.Scores[i])) {
					t.Fatalf("scores not best first: %v", got.Scores)
				}
			}
		})
	}
	if _, err := MergeClauses(rank.Ranking{Tools: []int{1}}, []rank.Ranking{c1}, ClauseOptions{}); err == nil || !strings.Contains(err.Error(), "scores") {
		t.Errorf("max without scores: err %v, want one about scores", err)
	}
	if _, err := MergeClauses(rank.Ranking{Tools: []int{1}}, []rank.Ranking{{Tools: []int{2}}}, ClauseOptions{Merge: MergeRRF}); err != nil {
		t.Errorf("rrf without scores: %v", err)
	}
}

// wordRanker scores tool i by how often word i of its vocabulary occurs in the query, and
// records the texts it ranks.
type wordRanker struct {
	vocab []string
	seen  *[]string
	ks    *[]int
}

func (r wordRanker) Rank(_ context.Context, qs []string, k int) ([]rank.Ranking, error) {
	*r.seen = append(*r.seen, qs...)
	*r.ks = append(*r.ks, k)
	out := make([]rank.Ranking, len(qs))
	for i, q := range qs {
		s := make([]float32, len(r.vocab))
		for t, w := range r.vocab {
			s[t] = float32(strings.Count(strings.ToLower(q), w)) + float32(len(r.vocab)-t)/100
		}
		out[i] = rank.TopK(s, k)
	}
	return out, nil
}

func TestClausesRanker(t *testing.T) {
	var seen []string
	var ks []int
	inner := rank.Texts(wordRanker{[]string{"flight", "hotel", "taxi", "weather", "flights"}, &seen, &ks})
	r, err := WithClauses(inner, ClauseOptions{Merge: MergeMax, Norm: NormMinMax, Depth: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(rank.QueryTokenizer); !ok {
		t.Errorf("WithClauses of a rank.Texts ranker is not a QueryTokenizer")
	}
	qs := []rank.Query{
		{Index: 4, Text: "Find a taxi to the station"},
		{Index: 9, Text: "Book a flight flight to Oslo and then find a hotel hotel near the airport"},
	}
	got, err := r.RankQueries(context.Background(), qs, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantSeen := []string{qs[0].Text, qs[1].Text, "Book a flight flight to Oslo", "find a hotel hotel near the airport"}
	if !reflect.DeepEqual(seen, wantSeen) || !reflect.DeepEqual(ks, []int{3}) {
		t.Errorf("inner ranked %q with k %v, want %q in one call with k 3", seen, ks, wantSeen)
	}
	// One clause: the inner ranking (taxi, then the prior's order). Two: each clause's tool.
	if want := [][]int{{2, 0}, {0, 1}}; !reflect.DeepEqual([][]int{got[0].Tools, got[1].Tools}, want) {
		t.Errorf("rankings %v %v, want %v", got[0].Tools, got[1].Tools, want)
	}
	plain, _ := inner.RankQueries(context.Background(), qs[:1], 2)
	if !reflect.DeepEqual(got[0], plain[0]) {
		t.Errorf("one-clause query: %v, want the inner ranking %v", got[0], plain[0])
	}
	// k 0 asks the inner ranker for every tool and returns every tool.
	ks = nil
	all, err := r.RankQueries(context.Background(), qs[1:], 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all[0].Tools) != 5 || !reflect.DeepEqual(ks, []int{0, 3}) {
		t.Errorf("k 0: %d tools, inner asked for %v; want 5 tools, k 0 for the query and 3 (the depth) for its clauses", len(all[0].Tools), ks)
	}
	// k 5 (every tool, one call at depth 5 for the query, one at 3 for its clauses) ranks as
	// k 0 does.
	deep, err := (&Clauses{Inner: inner, ClauseOptions: ClauseOptions{Merge: MergeMax, Norm: NormMinMax, Depth: 3}}).RankQueries(context.Background(), qs[1:], 5)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(all[0].Tools, deep[0].Tools) {
		t.Errorf("k 0 %v and k 5 %v rank differently", all[0].Tools, deep[0].Tools)
	}
}

func TestClauseOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		o    ClauseOptions
		want string
	}{
		{ClauseOptions{}, ""},
		{ClauseOptions{Merge: "sum"}, `merge "sum"`},
		{ClauseOptions{Norm: "l2"}, `normalisation "l2"`},
		{ClauseOptions{Whole: 1.5}, "weight 1.5"},
		{ClauseOptions{Whole: -1}, "weight -1"},
		{ClauseOptions{MinWords: -1}, "MinWords -1"},
		{ClauseOptions{Depth: -2}, "Depth -2"},
	} {
		err := tc.o.Check()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
	if got, want := (ClauseOptions{Merge: MergeMix, Whole: 0.3, MinWords: 5}).String(), "clauses mix zscore whole 0.3 min 5 words"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestClauseOptionsText: the text form of ClauseOptions (serve -clauses) reads what it
// writes, takes "on" for the defaults, and refuses a bad rule, key or value naming it.
func TestClauseOptionsText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ClauseOptions
		err  string
	}{
		{"on", ClauseOptions{}, ""},
		{"max", ClauseOptions{Merge: MergeMax}, ""},
		{"mix,whole=0.6", ClauseOptions{Merge: MergeMix, Whole: 0.6}, ""},
		{"rrf, min-words=4, depth=50", ClauseOptions{Merge: MergeRRF, MinWords: 4, Depth: 50}, ""},
		{"max,norm=minmax", ClauseOptions{Merge: MergeMax, Norm: NormMinMax}, ""},
		{"best", ClauseOptions{}, "want a merge rule first"},
		{"max,whole", ClauseOptions{}, "want key=value"},
		{"max,size=3", ClauseOptions{}, `unknown key "size"`},
		{"mix,whole=x", ClauseOptions{}, "whole"},
		{"mix,whole=2", ClauseOptions{}, "whole-query weight 2"},
		{"max,norm=l2", ClauseOptions{}, `normalisation "l2"`},
	} {
		var o ClauseOptions
		err := o.UnmarshalText([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || o != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, o, err, c.want)
			continue
		}
		b, _ := o.MarshalText()
		var back ClauseOptions
		if err := back.UnmarshalText(b); err != nil || back != o {
			t.Errorf("%q: wrote %q, read back %+v, %v", c.in, b, back, err)
		}
	}
}

// libraryRanker stands for a ranker that ranks within each query's library.
type libraryRanker struct{ rank.QueryRanker }

func (libraryRanker) RanksWithinLibraries() {}

// TestWithClausesKeepsLibraries: Clauses over a ranker that ranks within libraries says so,
// and over another ranker does not.
func TestWithClausesKeepsLibraries(t *testing.T) {
	type lib interface{ RanksWithinLibraries() }
	inner := rank.ScoreFunc(func(context.Context, rank.Query) ([]float32, error) { return []float32{1}, nil })
	for _, c := range []struct {
		name string
		r    rank.QueryRanker
		want bool
	}{
		{"plain", inner, false},
		{"within libraries", libraryRanker{inner}, true},
	} {
		got, err := WithClauses(c.r, ClauseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.(lib); ok != c.want {
			t.Errorf("%s: ranks within libraries %v, want %v", c.name, ok, c.want)
		}
	}
}
