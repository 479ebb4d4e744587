package benchmark

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/serve"
)

// TestSoakSummary: the slopes of a flat and of a growing RSS, and the extremes.
func TestSoakSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		rss  func(min float64) float64
		want string
	}{
		{"flat", func(float64) float64 { return 100 }, "rss MB: first 100.0, last 100.0, max 100.0; slope 0.000 MB/min (second half 0.000 MB/min)"},
		{"leaking 3 MB a minute", func(m float64) float64 { return 100 + 3*m }, "rss MB: first 100.0, last 130.0, max 130.0; slope 3.000 MB/min (second half 3.000 MB/min)"},
		{"levels off", func(m float64) float64 { return 100 + 10*min(m, 2) }, "max 120.0; slope 1.273 MB/min (second half 0.000 MB/min)"},
	} {
		r := &SoakResult{Requests: 100, Wall: 10 * time.Minute}
		for m := 0; m <= 10; m++ {
			r.Samples = append(r.Samples, SoakSample{At: time.Duration(m) * time.Minute,
				ProcessStats: ProcessStats{RSS: int64(tc.rss(float64(m)) * (1 << 20)), HeapInuse: 50 << 20, Goroutines: 10 + m%2}})
		}
		var out strings.Builder
		r.Summary(&out)
		if !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "goroutines: first 10, last 10, max 11") {
			t.Errorf("%s: summary lacks %q:\n%s", tc.name, tc.want, out.String())
		}
	}
}

// TestReadProcessStats reads the figures of a /metrics page, and fails on one without them.
func TestReadProcessStats(t *testing.T) {
	page := "# HELP go_goroutines x\ngo_goroutines 17\ngo_memstats_heap_inuse_bytes 2.097152e+06\nprocess_resident_memory_bytes 1.048576e+07\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad/metrics" {
			fmt.Fprintln(w, "go_goroutines 3")
			return
		}
		io.WriteString(w, page)
	}))
	defer srv.Close()
	st, err := ReadProcessStats(srv.Client(), srv.URL)
	if err != nil || st != (ProcessStats{RSS: 10 << 20, HeapInuse: 2 << 20, Goroutines: 17}) {
		t.Fatalf("%+v, %v", st, err)
	}
	if _, err := ReadProcessStats(srv.Client(), srv.URL+"/bad"); err == nil {
		t.Fatal("a page without the process figures read without error")
	}
}

// TestFirstRequestsAndSoak runs the first-request probe and a short soak against a server
// over a tiny random model's index.
func TestFirstRequestsAndSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("exports an index and serves it")
	}
	st, d := tinyIndexStore(t)
	srv := httptest.NewServer(serve.New(st, serve.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).Handler())
	defer srv.Close()
	queries := []string{d.Queries[0].Text, d.Queries[1].Text, d.Queries[2].Text}
	var out strings.Builder
	if err := FirstRequests(srv.Client(), srv.URL, queries, []int{3, 9}, 3, &out); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 3 || !strings.HasPrefix(strings.TrimSpace(lines[2]), "9 ") {
		t.Fatalf("first requests:\n%s", out.String())
	}
	out.Reset()
	res, err := Soak(context.Background(), srv.Client(), srv.URL, queries, 2, 3, 600*time.Millisecond, 100*time.Millisecond, &out)
	if err != nil {
		t.Fatal(err)
	}
	res.Summary(&out)
	if len(res.Samples) < 3 || res.Requests == 0 || res.Errors != 0 || res.Samples[1].RSS == 0 || res.Samples[1].Goroutines == 0 {
		t.Fatalf("soak: %d samples, %d requests, %d errors (%v):\n%s", len(res.Samples), res.Requests, res.Errors, res.FirstErr, out.String())
	}
}
