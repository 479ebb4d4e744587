package benchmark

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// TestCheckConsistency replays two updates over a library of two tools: answers of each
// version with that version's tools and size are consistent, others are not.
func TestCheckConsistency(t *testing.T) {
	base, err := toolindex.NewLibrary(4, []export.ToolRecord{{ID: "a", Title: "A"}, {ID: "b", Title: "B"}}, [][]float32{{1}, {1}})
	if err != nil {
		t.Fatal(err)
	}
	acks := []Ack{
		{Version: 6, Del: []string{"a"}},
		{Version: 5, Put: map[string]string{"c": "C"}},
	}
	ans := func(v uint64, size int, ids ...string) Answer {
		a := Answer{Version: v, LibrarySize: size}
		for _, id := range ids {
			a.Tools = append(a.Tools, struct {
				ID    string `json:"id"`
				Title string `json:"title"`
			}{id, strings.ToUpper(id)})
		}
		return a
	}
	for _, tc := range []struct {
		name            string
		answers         []Answer
		bad, versionsIn int
	}{
		{"consistent", []Answer{ans(4, 2, "a", "b"), ans(5, 3, "c", "a"), ans(6, 2, "b", "c")}, 0, 3},
		{"deleted tool", []Answer{ans(6, 2, "a", "b")}, 1, 1},
		{"wrong size", []Answer{ans(5, 2, "a", "b")}, 1, 1},
		{"too few tools", []Answer{ans(4, 2, "a")}, 1, 1},
	} {
		bad, versions := CheckConsistency(base, append([]Ack(nil), acks...), tc.answers, 2)
		if bad != tc.bad || versions != tc.versionsIn {
			t.Errorf("%s: %d bad from %d versions, want %d from %d", tc.name, bad, versions, tc.bad, tc.versionsIn)
		}
	}
}

// TestLoadTest load-tests a server over a tiny random model's index, with the writer.
func TestLoadTest(t *testing.T) {
	if testing.Short() {
		t.Skip("exports an index and serves it")
	}
	st, d := tinyIndexStore(t)
	tok := make([]byte, 8)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	srv := httptest.NewServer(serve.New(st, serve.Config{DefaultK: 3, Token: token, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).Handler())
	defer srv.Close()
	queries := []string{d.Queries[0].Text, d.Queries[1].Text, d.Queries[2].Text}
	var out strings.Builder
	err := LoadTest(Server{Client: &http.Client{Timeout: time.Minute}, URL: srv.URL, Token: token, Library: st.R.Library, Compactions: st.Compactions},
		queries, LoadOptions{Requests: 60, Concurrency: 3, K: 3, WriteInterval: time.Millisecond}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"reads only      60 requests, 0 errors", "reads + writer  60 requests, 0 errors", " 0 inconsistent"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// tinyIndexStore exports a tiny random bi-encoder's index of the embedded default dataset and
// opens it as a served store, closed when t ends; it returns the dataset too.
func tinyIndexStore(t *testing.T) (*store.Store, *data.Dataset) {
	t.Helper()
	be, d := exporttest.GoDefault(t)
	m, err := exporttest.BiEncoder(exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Data: d, DataSource: "default"}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, 10, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, d
}
