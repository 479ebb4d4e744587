package benchmark

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FirstRequests sends queries of growing length (words words each, cut from texts) to the
// retrieve endpoint of the server at url one at a time, two of each length (different texts,
// so that the second is no query-cache hit), and writes the latency of the first and the
// second to w: on a server fresh from its start, the first query of a padded length pays
// what the backend does on the first call of a shape (compile, allocate), unless the server
// warmed up (serve -warmup).
func FirstRequests(client *http.Client, url string, texts []string, words []int, k int, w io.Writer) error {
	var all []string
	for _, t := range texts {
		all = append(all, strings.Fields(t)...)
	}
	if len(all) == 0 {
		return fmt.Errorf("no query text to cut queries from")
	}
	fmt.Fprintf(w, "  %-6s %-12s %-12s\n", "words", "first_ms", "second_ms")
	at := 0
	for _, n := range words {
		var lat [2]time.Duration
		for i := range lat {
			q := make([]string, n)
			for j := range q {
				q[j] = all[at%len(all)]
				at++
			}
			t0 := time.Now()
			if err := retrieveOnce(client, url, strings.Join(q, " "), k, &Answer{}); err != nil {
				return fmt.Errorf("query of %d words: %w", n, err)
			}
			lat[i] = time.Since(t0)
		}
		fmt.Fprintf(w, "  %-6d %-12.1f %-12.1f\n", n, ms(lat[0]), ms(lat[1]))
	}
	return nil
}

// retrieveOnce sends one retrieve request for query and decodes its answer into a.
func retrieveOnce(client *http.Client, url, query string, k int, a *Answer) error {
	body, _ := json.Marshal(map[string]any{"query": query, "k": k})
	b, err := postOK(client, url+"/v1/retrieve", body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, a); err != nil {
		return err
	}
	if len(a.Tools) != min(k, a.LibrarySize) {
		return fmt.Errorf("%d tools, want %d", len(a.Tools), min(k, a.LibrarySize))
	}
	return nil
}

// ProcessStats are a server's process figures read from its /metrics.
type ProcessStats struct {
	RSS, HeapInuse int64 // bytes
	Goroutines     int
}

// ReadProcessStats reads the resident memory, the Go heap in use and the goroutines of the
// server at url from its Prometheus metrics (process_resident_memory_bytes,
// go_memstats_heap_inuse_bytes, go_goroutines).
func ReadProcessStats(client *http.Client, url string) (ProcessStats, error) {
	var st ProcessStats
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			st.RSS, found = int64(f), found+1
		case "go_memstats_heap_inuse_bytes":
			st.HeapInuse, found = int64(f), found+1
		case "go_goroutines":
			st.Goroutines, found = int(f), found+1
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if found < 3 {
		return st, fmt.Errorf("GET /metrics: no process_resident_memory_bytes, go_memstats_heap_inuse_bytes or go_goroutines")
	}
	return st, nil
}

// SoakSample is one interval of a soak.
type SoakSample struct {
	At               time.Duration // since the start
	Requests, Errors int           // in the interval
	P50, P99         time.Duration // of the interval's requests
	ProcessStats
}

// SoakResult is what Soak measured.
type SoakResult struct {
	Samples          []SoakSample
	Requests, Errors int
	FirstErr         error
	Wall             time.Duration
}

// Soak sends retrieve requests of k tools (queries in turn) from conc clients to the server
// at url for d, and every interval reads its process figures (ReadProcessStats) and writes a
// line to w: requests, errors, latency percentiles of the interval, RSS, heap in use and
// goroutines.
func Soak(ctx context.Context, client *http.Client, url string, queries []string, conc, k int, d, interval time.Duration, w io.Writer) (*SoakResult, error) {
	res := &SoakResult{}
	st, err := ReadProcessStats(client, url)
	if err != nil {
		return nil, err
	}
	res.Samples = append(res.Samples, SoakSample{ProcessStats: st})
	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   int
		next   atomic.Int64
		wg     sync.WaitGroup
		stop   = make(chan struct{})
		start  = time.Now()
		header = "  %-8s %-9s %-7s %-8s %-9s %-9s %-8s %-8s %-10s\n"
	)
	fmt.Fprintf(w, header, "t_s", "requests", "errors", "qps", "p50_ms", "p99_ms", "rss_mb", "heap_mb", "goroutines")
	row := func(s SoakSample, qps float64) {
		fmt.Fprintf(w, "  %-8.0f %-9d %-7d %-8.1f %-9.1f %-9.1f %-8.1f %-8.1f %-10d\n", s.At.Seconds(), s.Requests, s.Errors, qps,
			ms(s.P50), ms(s.P99), float64(s.RSS)/(1<<20), float64(s.HeapInuse)/(1<<20), s.Goroutines)
	}
	row(res.Samples[0], 0)
	for c := 0; c < conc; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1) - 1)
				t0 := time.Now()
				err := retrieveOnce(client, url, queries[i%len(queries)], k, &Answer{})
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs++
					res.Errors++
					if res.FirstErr == nil {
						res.FirstErr = err
					}
				}
				res.Requests++
				mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := start
	var failed error
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done, failed = true, ctx.Err()
			continue
		case <-tick.C:
		}
		now := time.Now()
		mu.Lock()
		l, e := lat, errs
		lat, errs = nil, 0
		mu.Unlock()
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		st, err := ReadProcessStats(client, url)
		if err != nil {
			failed = err
			break
		}
		s := SoakSample{At: now.Sub(start), Requests: len(l), Errors: e, P50: percentile(l, 0.5), P99: percentile(l, 0.99), ProcessStats: st}
		res.Samples = append(res.Samples, s)
		row(s, float64(len(l))/now.Sub(last).Seconds())
		last = now
		done = now.Sub(start) >= d
	}
	close(stop)
	wg.Wait()
	res.Wall = time.Since(start)
	return res, failed
}

// Summary writes the soak's totals and its memory and goroutine trend to w: first, last and
// largest RSS and heap, and their slopes (least squares, MB a minute) over the whole soak and
// over its second half.
func (r *SoakResult) Summary(w io.Writer) {
	s := r.Samples
	if len(s) < 2 {
		fmt.Fprintln(w, "  soak: too short for a trend")
		return
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	var maxRSS, maxHeap int64
	maxG := 0
	for _, x := range s {
		maxRSS, maxHeap, maxG = max(maxRSS, x.RSS), max(maxHeap, x.HeapInuse), max(maxG, x.Goroutines)
	}
	slope := func(xs []SoakSample, f func(SoakSample) float64) float64 {
		var sx, sy, sxx, sxy float64
		n := float64(len(xs))
		for _, x := range xs {
			t := x.At.Minutes()
			y := f(x)
			sx, sy, sxx, sxy = sx+t, sy+y, sxx+t*t, sxy+t*y
		}
		if d := n*sxx - sx*sx; d != 0 {
			return (n*sxy - sx*sy) / d
		}
		return 0
	}
	rss := func(x SoakSample) float64 { return mb(x.RSS) }
	heap := func(x SoakSample) float64 { return mb(x.HeapInuse) }
	half := s[len(s)/2:]
	fmt.Fprintf(w, "  soak: %d requests in %v (%.1f QPS), %d errors\n", r.Requests, r.Wall.Round(time.Second), float64(r.Requests)/r.Wall.Seconds(), r.Errors)
	fmt.Fprintf(w, "  rss MB: first %.1f, last %.1f, max %.1f; slope %.3f MB/min (second half %.3f MB/min)\n",
		rss(s[0]), rss(s[len(s)-1]), mb(maxRSS), slope(s, rss), slope(half, rss))
	fmt.Fprintf(w, "  heap in use MB: first %.1f, last %.1f, max %.1f; slope %.3f MB/min (second half %.3f MB/min)\n",
		heap(s[0]), heap(s[len(s)-1]), mb(maxHeap), slope(s, heap), slope(half, heap))
	fmt.Fprintf(w, "  goroutines: first %d, last %d, max %d\n", s[0].Goroutines, s[len(s)-1].Goroutines, maxG)
}
