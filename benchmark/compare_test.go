package benchmark_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolret/toolret/benchmark"
)

// CompareLoad sends every endpoint the same number of requests with the same texts at each
// concurrency, prints one parseable row per endpoint and concurrency, and fails on an error.
func TestCompareLoad(t *testing.T) {
	var got [2]atomic.Int64
	texts := map[string]bool{}
	for _, s := range []string{"a", "b", "c"} {
		texts[s] = true
	}
	srv := func(i int, status int) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Input string }
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !texts[req.Input] {
				t.Errorf("request %q, %v", req.Input, err)
			}
			got[i].Add(1)
			w.WriteHeader(status)
			w.Write([]byte(`{"data":[{"index":0,"embedding":[0.6,0.8]}]}`))
		}))
	}
	a, b := srv(0, 200), srv(1, 200)
	defer a.Close()
	defer b.Close()
	eps := []benchmark.Endpoint{benchmark.EmbeddingsEndpoint("toolret", a.URL, "m", 2), benchmark.EmbeddingsEndpoint("infinity", b.URL, "m", 2)}
	rows, err := benchmark.CompareLoad(http.DefaultClient, [][]benchmark.Endpoint{eps}, [][]string{{"a", "b", "c"}},
		benchmark.CompareOptions{Concurrency: []int{1, 4}, Requests: 20, Warmup: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Load() != 50 || got[1].Load() != 50 {
		t.Errorf("requests %d and %d, want 2 × (20 + 5) each", got[0].Load(), got[1].Load())
	}
	var out bytes.Buffer
	benchmark.PrintRows(&out, rows)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"SYSTEM CONCURRENCY QPS P50_MS P99_MS", "toolret 1 ", "infinity 1 ", "toolret 4 ", "infinity 4 "}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, want[i]) || len(strings.Fields(l)) != 5 {
			t.Errorf("line %d %q, want %q and 5 fields", i, l, want[i])
		}
	}
	bad := srv(0, 500)
	defer bad.Close()
	_, err = benchmark.CompareLoad(http.DefaultClient, [][]benchmark.Endpoint{{benchmark.EmbeddingsEndpoint("x", bad.URL, "m", 2)}}, [][]string{{"a"}},
		benchmark.CompareOptions{Concurrency: []int{2}, Requests: 10})
	if err == nil || !strings.Contains(err.Error(), "status 500") {
		t.Errorf("a failing server: %v, want an error naming status 500", err)
	}
	if v := benchmark.Cosine([]float32{1, 0}, []float32{0.6, 0.8}); v < 0.59 || v > 0.61 {
		t.Errorf("cosine %g, want 0.6", v)
	}
}
