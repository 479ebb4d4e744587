package export

import (
	"strings"
	"testing"
)

// TestRerankerSettings: the export flags' settings become the recipe's reranker, or one error
// naming the flag.
func TestRerankerSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*RerankerSettings)
		want string // error, or "" for a reranker (nil without a cross-encoder)
	}{
		{"none", func(*RerankerSettings) {}, ""},
		{"depth without one", func(s *RerankerSettings) { s.Depth = 10 }, "need -recipe-reranker"},
		{"weight without one", func(s *RerankerSettings) { s.Weight = 0.3 }, "need -recipe-reranker"},
		{"order alone", func(s *RerankerSettings) { s.CrossEncoder = "ce" }, ""},
		{"weighted", func(s *RerankerSettings) { s.CrossEncoder, s.Weight = "ce", 0.4 }, ""},
		{"depth 0", func(s *RerankerSettings) { s.CrossEncoder, s.Depth = "ce", 0 }, "-recipe-rerank-depth"},
		{"weight 1.5", func(s *RerankerSettings) { s.CrossEncoder, s.Weight = "ce", 1.5 }, "-recipe-rerank-weight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := DefaultRerankerSettings()
			c.edit(&s)
			r, err := s.Reranker()
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one containing %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (r != nil) != (s.CrossEncoder != "") {
				t.Fatalf("reranker %+v for %+v", r, s)
			}
			if r != nil && (r.Path != RerankerDir || r.Dir != "ce" || r.Depth != s.Depth || (r.Weight == nil) != (s.Weight == -1)) {
				t.Errorf("reranker %+v for %+v", r, s)
			}
		})
	}
}
