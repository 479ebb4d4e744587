package bm25

import (
	"context"
	"math"
	"reflect"
	"testing"
)

func TestTokenize(t *testing.T) {
	got := Tokenize("Get the WEATHER-forecast, for Zürich (2024)!", true)
	want := []string{"get", "weather", "forecast", "zürich", "2024"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Tokenize = %q, want %q", got, want)
	}
}

func TestScoresHandComputed(t *testing.T) {
	docs := []string{"weather forecast", "stock price", "weather weather alerts today"}
	ix := New(docs, Params{K1: 1.2, B: 0.75, Stopwords: true})
	s := ix.Scores("weather")
	// N=3, df(weather)=2: idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln(1.6).
	// avgdl = (2+2+4)/3 = 8/3.
	// doc0: tf=1, |d|=2: 1*2.2 / (1 + 1.2*(0.25 + 0.75*2/(8/3))).
	// doc2: tf=2, |d|=4: 2*2.2 / (2 + 1.2*(0.25 + 0.75*4/(8/3))).
	idf := math.Log(1.6)
	want0 := idf * 2.2 / (1 + 1.2*(0.25+0.75*2/(8.0/3)))
	want2 := idf * 2 * 2.2 / (2 + 1.2*(0.25+0.75*4/(8.0/3)))
	if math.Abs(float64(s[0])-want0) > 1e-6 || s[1] != 0 || math.Abs(float64(s[2])-want2) > 1e-6 {
		t.Fatalf("scores %v, want [%v 0 %v]", s, want0, want2)
	}
	r, err := ix.Rank(context.Background(), []string{"weather alerts", "nothing matches"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r[0].Tools[0] != 2 {
		t.Errorf("top tool %v, want 2", r[0].Tools)
	}
	// No match: all zero, ties broken by lower index.
	if !reflect.DeepEqual(r[1].Tools, []int{0, 1}) {
		t.Errorf("no-match ranking %v, want [0 1]", r[1].Tools)
	}
}
