package fusion

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRunRoundTrip(t *testing.T) {
	odd := math.Nextafter32(1, 2) // needs every digit of a float32
	in := []Result{
		{Query: "q2", Docs: []string{"d9", "d1", "d3", "d4"}, Scores: []float32{odd, 0.1, 0.1, -3.5e-8}},
		{Query: "10", Docs: []string{"api/x", "7"}, Scores: []float32{float32(math.Inf(1)), 1e30}},
		{Query: "empty", Docs: []string{}, Scores: []float32{}},
		{Query: "q1", Docs: []string{"d1"}, Scores: []float32{float32(math.Inf(-1))}},
	}
	path := filepath.Join(t.TempDir(), "sub", "a.run")
	if err := WriteRunFile(path, "toolret-test", in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if first := strings.SplitN(string(b), "\n", 2)[0]; first != "q2 Q0 d9 1 1.0000001 toolret-test" {
		t.Errorf("first line %q", first)
	}
	got, err := ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A query without documents has no line: it does not come back.
	want := []Result{in[0], in[1], in[3]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestReadRunWhitespaceAndOrder(t *testing.T) {
	// Tabs, repeated spaces, CRLF, blank lines, ranks out of order and interleaved queries.
	text := "  q1\tQ0\ta\t2\t0.5\ttag\r\n\n" +
		"q2 0   b 1 3 other\n" +
		"q1 Q0 b    1 0.75 tag  \n" +
		"\t\n" +
		"q1 Q0 c 3 0.5 tag"
	got, err := ReadRun(strings.NewReader(text), "x.run")
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Query: "q1", Docs: []string{"b", "a", "c"}, Scores: []float32{0.75, 0.5, 0.5}},
		{Query: "q2", Docs: []string{"b"}, Scores: []float32{3}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestReadRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"five fields", "q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4\n", "x.run:2: want 6 fields"},
		{"seven fields", "q1 Q0 a 1 0.5 t extra\n", "x.run:1: want 6 fields"},
		{"rank not a number", "q1 Q0 a one 0.5 t\n", `x.run:1: rank "one"`},
		{"negative rank", "q1 Q0 a -1 0.5 t\n", `x.run:1: rank "-1"`},
		{"score not a number", "q1 Q0 a 1 high t\n", `x.run:1: score "high"`},
		{"NaN score", "q1 Q0 a 1 NaN t\n", `x.run:1: score "NaN"`},
		{"document twice", "q1 Q0 a 1 0.5 t\nq2 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\n", `x.run:3: query "q1": document "a" again (first at line 1)`},
		{"rank twice", "q1 Q0 a 1 0.5 t\nq1 Q0 b 1 0.5 t\n", `x.run:2: query "q1": rank 1 again (first at line 1)`},
		{"scores against ranks", "q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.6 t\n", "x.run:2: query \"q1\": score 0.6 at rank 2 is above 0.5 at rank 1 (line 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRun(strings.NewReader(tc.text), "x.run")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadRunFile(filepath.Join(t.TempDir(), "missing.run")); err == nil || !strings.Contains(err.Error(), "missing.run") {
		t.Errorf("missing file: %v", err)
	}
}

func TestWriteRunErrors(t *testing.T) {
	ok := Result{Query: "q", Docs: []string{"a", "b"}, Scores: []float32{2, 1}}
	for _, tc := range []struct {
		name string
		tag  string
		res  Result
		want string
	}{
		{"empty tag", "", ok, "tag"},
		{"tag with space", "my run", ok, `tag "my run"`},
		{"query with space", "t", Result{Query: "a b", Docs: []string{"x"}, Scores: []float32{1}}, `query id "a b"`},
		{"document with tab", "t", Result{Query: "q", Docs: []string{"x\ty"}, Scores: []float32{1}}, `document id "x\ty"`},
		{"scores per document", "t", Result{Query: "q", Docs: []string{"a", "b"}, Scores: []float32{1}}, "1 scores for 2 documents"},
		{"rising scores", "t", Result{Query: "q", Docs: []string{"a", "b"}, Scores: []float32{1, 2}}, "score 2 at rank 2 is above 1"},
		{"NaN", "t", Result{Query: "q", Docs: []string{"a"}, Scores: []float32{float32(math.NaN())}}, "NaN"},
	} {
		var b bytes.Buffer
		if err := WriteRun(&b, tc.tag, []Result{tc.res}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	// A failed write leaves no file.
	path := filepath.Join(t.TempDir(), "bad.run")
	if err := WriteRunFile(path, "bad tag", []Result{ok}); err == nil || !strings.Contains(err.Error(), "bad.run") {
		t.Errorf("WriteRunFile: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed WriteRunFile left %s", path)
	}
}
