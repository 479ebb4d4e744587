package benchmark

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint is one HTTP endpoint CompareLoad sends requests to: POST URL with the JSON Body
// of a text; Check validates a 200 answer's body.
type Endpoint struct {
	// System names it in the rows printed (toolret, infinity, toolret-long...).
	System string
	URL    string
	Body   func(text string) any
	Check  func(body []byte) error
}

// EmbeddingsEndpoint is an OpenAI-style POST /v1/embeddings at url: one text per request
// ({"input": text, "model": model}), an answer with one embedding of dim values (dim 0: any
// length but 0).
func EmbeddingsEndpoint(system, url, model string, dim int) Endpoint {
	return Endpoint{System: system, URL: url,
		Body: func(text string) any { return map[string]any{"input": text, "model": model} },
		Check: func(b []byte) error {
			e, err := DecodeEmbeddings(b)
			if err != nil {
				return err
			}
			if len(e) != 1 || len(e[0]) == 0 || dim > 0 && len(e[0]) != dim {
				return fmt.Errorf("answer has %d embeddings (first of %d values), want 1 of %d", len(e), lenFirst(e), dim)
			}
			return nil
		}}
}

func lenFirst(e [][]float32) int {
	if len(e) == 0 {
		return 0
	}
	return len(e[0])
}

// SearchEndpoint is a POST of {"query": text, "k": k} at url (toolret's /v1/search or
// /v1/retrieve), answered with a JSON object.
func SearchEndpoint(system, url string, k int) Endpoint {
	return Endpoint{System: system, URL: url,
		Body: func(text string) any { return map[string]any{"query": text, "k": k} },
		Check: func(b []byte) error {
			var v map[string]json.RawMessage
			if err := json.Unmarshal(b, &v); err != nil {
				return fmt.Errorf("answer: %w", err)
			}
			if len(v) == 0 {
				return errors.New("empty answer")
			}
			return nil
		}}
}

// DecodeEmbeddings returns the embeddings of an OpenAI-style embeddings answer, in order.
func DecodeEmbeddings(b []byte) ([][]float32, error) {
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("embeddings answer: %w", err)
	}
	out := make([][]float32, len(r.Data))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("embeddings answer: index %d of %d", d.Index, len(out))
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// Row is one measured cell: an endpoint at one concurrency.
type Row struct {
	System      string
	Concurrency int
	Requests    int
	QPS         float64
	P50, P99    time.Duration
}

// CompareOptions are CompareLoad's settings.
type CompareOptions struct {
	// Concurrency lists the numbers of concurrent clients, each measured in turn.
	Concurrency []int
	// Requests are sent per endpoint and concurrency, after Warmup requests not counted.
	Requests, Warmup int
}

// CompareLoad measures each endpoint of each group at each concurrency: Warmup requests,
// then Requests timed ones from that many clients, request i sending texts[i%len(texts)], so
// every endpoint gets the same texts in the same order. The endpoints of a group take turns
// at each concurrency, their order reversed from one concurrency to the next, so that a
// change of the machine's load falls on both. Any failed request fails the run.
func CompareLoad(client *http.Client, groups [][]Endpoint, texts [][]string, o CompareOptions) ([]Row, error) {
	if len(groups) != len(texts) {
		return nil, fmt.Errorf("benchmark: %d endpoint groups, %d text lists", len(groups), len(texts))
	}
	var rows []Row
	for g, eps := range groups {
		if len(texts[g]) == 0 {
			return nil, errors.New("benchmark: no texts")
		}
		for ci, c := range o.Concurrency {
			order := make([]int, len(eps))
			for i := range order {
				order[i] = i
				if ci%2 == 1 {
					order[i] = len(eps) - 1 - i
				}
			}
			cell := make([]Row, len(eps))
			for _, e := range order {
				ep := eps[e]
				if o.Warmup > 0 {
					warm := texts[g]
					if len(warm) > 1 {
						warm = append(append([]string{}, warm[len(warm)/2:]...), warm[:len(warm)/2]...)
					}
					if _, err := Blast(client, ep, warm, o.Warmup, c); err != nil {
						return nil, fmt.Errorf("%s warm-up: %w", ep.System, err)
					}
				}
				lat, wall, err := blastTimed(client, ep, texts[g], o.Requests, c)
				if err != nil {
					return nil, fmt.Errorf("%s at concurrency %d: %w", ep.System, c, err)
				}
				cell[e] = Row{System: ep.System, Concurrency: c, Requests: o.Requests, QPS: float64(o.Requests) / wall.Seconds(),
					P50: percentile(lat, 0.5), P99: percentile(lat, 0.99)}
			}
			rows = append(rows, cell...)
		}
	}
	return rows, nil
}

// Blast sends n requests of texts (in turn) to ep from conc clients and returns the sorted
// latencies; it stops at the first error.
func Blast(client *http.Client, ep Endpoint, texts []string, n, conc int) ([]time.Duration, error) {
	lat, _, err := blastTimed(client, ep, texts, n, conc)
	return lat, err
}

func blastTimed(client *http.Client, ep Endpoint, texts []string, n, conc int) ([]time.Duration, time.Duration, error) {
	bodies := make([][]byte, min(n, len(texts)))
	for i := range bodies {
		b, err := json.Marshal(ep.Body(texts[i]))
		if err != nil {
			return nil, 0, err
		}
		bodies[i] = b
	}
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				err := post(client, ep, bodies[i%len(bodies)])
				lat[i] = time.Since(t0)
				if err != nil {
					once.Do(func() { first = fmt.Errorf("request %d: %w", i, err) })
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if first != nil {
		return nil, 0, first
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return lat, wall, nil
}

func post(client *http.Client, ep Endpoint, body []byte) error {
	b, err := postOK(client, ep.URL, body)
	if err != nil {
		return err
	}
	return ep.Check(b)
}

// postOK POSTs the JSON body to url and returns the answer's body, an error unless the status
// is 200 OK.
func postOK(client *http.Client, url string, body []byte) ([]byte, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: status %d: %.300s", url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

// Embed returns the embedding of each text from an OpenAI-style embeddings endpoint, one
// request per text.
func Embed(client *http.Client, ep Endpoint, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		body, err := json.Marshal(ep.Body(t))
		if err != nil {
			return nil, err
		}
		resp, err := client.Post(ep.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("POST %s: status %d: %.300s", ep.URL, resp.StatusCode, b)
		}
		e, err := DecodeEmbeddings(b)
		if err != nil {
			return nil, err
		}
		if len(e) != 1 {
			return nil, fmt.Errorf("POST %s: %d embeddings for one text", ep.URL, len(e))
		}
		out[i] = e[0]
	}
	return out, nil
}

// Cosine returns the cosine similarity of a and b (0 if either is zero or their lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// PrintRows writes rows under the header SYSTEM CONCURRENCY QPS P50_MS P99_MS, one line each.
func PrintRows(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "SYSTEM CONCURRENCY QPS P50_MS P99_MS")
	for _, r := range rows {
		fmt.Fprintf(w, "%s %d %.1f %.2f %.2f\n", r.System, r.Concurrency, r.QPS, ms(r.P50), ms(r.P99))
	}
}
