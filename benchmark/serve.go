package benchmark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
)

// Server is the HTTP server (package serve) LoadTest loads.
type Server struct {
	Client *http.Client
	// URL is its address (http://host:port), Token its write token.
	URL, Token string
	// Library returns the library it serves now; Compactions how often it has compacted.
	Library     func() *toolindex.Library
	Compactions func() int64
}

// LoadOptions are a load test's settings.
type LoadOptions struct {
	// Requests retrieve requests of K tools per phase, from Concurrency clients.
	Requests, Concurrency, K int
	// WriteInterval is the writer's pause between its updates.
	WriteInterval time.Duration
}

// LoadTest sends o.Requests retrieve requests of queries (in turn) to s, first alone, then
// while a writer adds, replaces and deletes tools, and writes each phase's QPS and latency
// percentiles to w. It checks that every answer is consistent with one library version (its
// tools, titles and size are those of the version it names) and fails on any error or
// inconsistency.
func LoadTest(s Server, queries []string, o LoadOptions, w io.Writer) error {
	// Warm up every length bucket.
	if _, err := LoadPhase(s.Client, s.URL, queries[:min(len(queries), 256)], 256, 4, o.K); err != nil {
		return err
	}
	res, err := LoadPhase(s.Client, s.URL, queries, o.Requests, o.Concurrency, o.K)
	if err != nil {
		return err
	}
	res.Print(w, "reads only")
	if res.Errors > 0 {
		return fmt.Errorf("%d errors, first: %v", res.Errors, res.FirstErr)
	}

	// The same with a writer.
	base := s.Library()
	wr := &writer{client: s.Client, url: s.URL, token: s.Token, interval: o.WriteInterval, texts: make([]string, base.Len()), rng: mrand.New(mrand.NewPCG(1, 2))}
	for i := range wr.texts {
		wr.texts[i] = base.Tool(i).Text
	}
	stop := make(chan struct{})
	wdone := make(chan error, 1)
	go func() { wdone <- wr.run(stop) }()
	res2, err := LoadPhase(s.Client, s.URL, queries, o.Requests, o.Concurrency, o.K)
	close(stop)
	werr := <-wdone
	if err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("writer: %w", werr)
	}
	res2.Print(w, "reads + writer")
	bad, versions := CheckConsistency(base, wr.acks, res2.Answers, o.K)
	sort.Slice(wr.lat, func(a, b int) bool { return wr.lat[a] < wr.lat[b] })
	fmt.Fprintf(w, "  writer: %d updates (p50 %.2f ms, p99 %.2f ms), %d compactions; answers from %d library versions, %d inconsistent\n",
		len(wr.acks), ms(percentile(wr.lat, 0.5)), ms(percentile(wr.lat, 0.99)), s.Compactions(), versions, bad)
	if res2.Errors > 0 {
		return fmt.Errorf("%d errors with the writer, first: %v", res2.Errors, res2.FirstErr)
	}
	if bad > 0 {
		return fmt.Errorf("%d answers inconsistent with their library version", bad)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the p quantile of sorted latencies (0 for none).
func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}

// Answer is what a retrieve response says: its library version and size, and its tools.
type Answer struct {
	Version     uint64 `json:"version"`
	LibrarySize int    `json:"library_size"`
	Tools       []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"tools"`
}

// PhaseResult is what LoadPhase measured.
type PhaseResult struct {
	// N requests were sent; Errors failed, the first with FirstErr.
	N, Errors int
	FirstErr  error
	// Wall is the phase's duration, Latencies each request's, Answers each one's response.
	Wall      time.Duration
	Latencies []time.Duration
	Answers   []Answer
}

// Print writes the phase's QPS and latency percentiles to w in one line.
func (r *PhaseResult) Print(w io.Writer, label string) {
	sort.Slice(r.Latencies, func(a, b int) bool { return r.Latencies[a] < r.Latencies[b] })
	fmt.Fprintf(w, "  %-15s %d requests, %d errors, %.0f QPS, latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		label, r.N, r.Errors, float64(r.N)/r.Wall.Seconds(), ms(percentile(r.Latencies, 0.5)), ms(percentile(r.Latencies, 0.9)), ms(percentile(r.Latencies, 0.99)), ms(r.Latencies[len(r.Latencies)-1]))
}

// LoadPhase sends n retrieve requests for k tools (queries in turn) from conc clients to
// the server at url and checks each answer has min(k, library size) tools.
func LoadPhase(client *http.Client, url string, queries []string, n, conc, k int) (*PhaseResult, error) {
	res := &PhaseResult{N: n, Latencies: make([]time.Duration, n), Answers: make([]Answer, n)}
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < conc; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body, _ := json.Marshal(map[string]any{"query": queries[i%len(queries)], "k": k})
				t0 := time.Now()
				resp, err := client.Post(url+"/v1/retrieve", "application/json", bytes.NewReader(body))
				var b []byte
				if err == nil {
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
					}
				}
				res.Latencies[i] = time.Since(t0)
				if err == nil {
					err = json.Unmarshal(b, &res.Answers[i])
				}
				if err == nil && len(res.Answers[i].Tools) != min(k, res.Answers[i].LibrarySize) {
					err = fmt.Errorf("%d tools, want %d", len(res.Answers[i].Tools), k)
				}
				if err != nil {
					mu.Lock()
					if res.Errors++; res.FirstErr == nil {
						res.FirstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	res.Wall = time.Since(start)
	return res, nil
}

// Ack is an acknowledged update: the version it made, the tools put (id → title) and the
// ids deleted.
type Ack struct {
	Version uint64
	Put     map[string]string
	Del     []string
}

// writer adds tools (copies of indexed tools' texts), replaces and deletes them.
type writer struct {
	client   *http.Client
	url      string
	token    string
	interval time.Duration
	texts    []string
	rng      *mrand.Rand
	acks     []Ack
	lat      []time.Duration
}

func (w *writer) run(stop chan struct{}) error {
	var live []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		case <-time.After(w.interval):
		}
		var req *http.Request
		a := Ack{Put: map[string]string{}}
		switch c := w.rng.IntN(4); {
		case c == 0 && len(live) > 0 || len(live) > 50:
			j := w.rng.IntN(len(live))
			a.Del = []string{live[j]}
			req, _ = http.NewRequest("DELETE", w.url+"/v1/tools/"+live[j], nil)
			live = append(live[:j], live[j+1:]...)
		default:
			id := fmt.Sprintf("bench-live-%d", i)
			if c == 1 && len(live) > 0 {
				id = live[w.rng.IntN(len(live))]
			} else {
				live = append(live, id)
			}
			title := fmt.Sprintf("%s rev %d", id, i)
			a.Put[id] = title
			body, _ := json.Marshal(map[string]any{"tools": []map[string]string{{"id": id, "title": title, "text": w.texts[w.rng.IntN(len(w.texts))]}}})
			req, _ = http.NewRequest("POST", w.url+"/v1/tools", bytes.NewReader(body))
		}
		req.Header.Set("Authorization", "Bearer "+w.token)
		t0 := time.Now()
		resp, err := w.client.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		w.lat = append(w.lat, time.Since(t0))
		var up serve.UpdateResponse
		if err := json.Unmarshal(b, &up); err != nil {
			return err
		}
		a.Version = up.Version
		w.acks = append(w.acks, a)
	}
}

// CheckConsistency replays the acknowledged updates over base, version by version, and
// counts the answers whose tools, titles or library size differ from their version's.
func CheckConsistency(base *toolindex.Library, acks []Ack, answers []Answer, k int) (bad, versions int) {
	lib := map[string]string{}
	for i := 0; i < base.Len(); i++ {
		lib[base.Tool(i).ID] = base.Tool(i).Title
	}
	sort.Slice(acks, func(a, b int) bool { return acks[a].Version < acks[b].Version })
	idx := make([]int, len(answers))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return answers[idx[a]].Version < answers[idx[b]].Version })
	seen := map[uint64]bool{}
	j := 0
	v := base.Version
	for _, i := range idx {
		a := answers[i]
		for j < len(acks) && acks[j].Version <= a.Version {
			if acks[j].Version != v+1 {
				bad++ // a version made by no acknowledged update
			}
			for _, id := range acks[j].Del {
				delete(lib, id)
			}
			for id, t := range acks[j].Put {
				lib[id] = t
			}
			v = acks[j].Version
			j++
		}
		seen[a.Version] = true
		ok := a.Version == v && a.LibrarySize == len(lib) && len(a.Tools) == min(k, len(lib))
		for _, t := range a.Tools {
			if title, in := lib[t.ID]; !in || title != t.Title {
				ok = false
			}
		}
		if !ok {
			bad++
		}
	}
	return bad, len(seen)
}
