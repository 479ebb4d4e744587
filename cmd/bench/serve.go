package benchcmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/retriever"
	"github.com/toolret/toolret/serve"
)

// serveBench load-tests the HTTP server (package serve) on 127.0.0.1: -requests retrieve
// requests from -concurrency clients over an index of the tools of -data, first alone, then
// while a writer adds, replaces and deletes tools; it reports QPS and latency percentiles
// and checks that every answer is consistent with one library version (its tools, titles
// and size are those of the version it names). It fails on any error or inconsistency.
//
//	bench serve [-run RUN | -index DIR] [-data DIR] [-requests 20000] [-concurrency 32] [-k 5]
//	            [-write-interval 10ms] [-compact-every 100]
func serveBench(args []string) error {
	fs := flag.NewFlagSet("bench serve", flag.ContinueOnError)
	run := fs.String("run", "", "bi-encoder run whose index is served (default: a random model)")
	indexDir := fs.String("index", "", "serve a copy of this exported index instead of exporting one")
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose tools are indexed and whose queries are sent")
	n := fs.Int("requests", 20000, "retrieve requests per phase")
	conc := fs.Int("concurrency", 32, "concurrent clients")
	k := fs.Int("k", 5, "tools per query")
	interval := fs.Duration("write-interval", 10*time.Millisecond, "pause between the writer's updates")
	compactEvery := fs.Int("compact-every", 100, "server -compact-every")
	layers := fs.Int("layers", 2, "random model: layers")
	hidden := fs.Int("hidden", 192, "random model: hidden size")
	heads := fs.Int("heads", 4, "random model: attention heads")
	beName := cli.Backend(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.First(cli.Positive("requests", *n), cli.Positive("concurrency", *conc), cli.Positive("k", *k),
		cli.NonNegative("write-interval", interval.Seconds()), cli.NonNegative("compact-every", *compactEvery),
		cli.Positive("layers", *layers), cli.Positive("hidden", *hidden), cli.Positive("heads", *heads)); err != nil {
		return err
	}
	if *run != "" && *indexDir != "" {
		return errors.New("give -run or -index, not both")
	}
	be, err := backend.Open(backend.Name(*beName))
	if err != nil {
		return err
	}
	d, err := data.Load(*dataDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v; using the embedded dataset\n", err)
		if d, err = data.Default(); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "toolret-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "index")
	what := ""
	switch {
	case *indexDir != "":
		if err := copyTree(*indexDir, dir); err != nil {
			return err
		}
		what = "index " + *indexDir
	default:
		var m *export.Model
		if *run != "" {
			if m, err = export.LoadModel(*run, be); err != nil {
				return err
			}
			what = "run " + *run
		} else {
			if m, err = exporttest.BiEncoder(exporttest.Options{Hidden: *hidden, Layers: *layers, Heads: *heads}, be, 1); err != nil {
				return err
			}
			what = fmt.Sprintf("random bi-encoder (%d layers, hidden %d)", *layers, *hidden)
		}
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Data: d, DataSource: *dataDir}); err != nil {
			return err
		}
	}
	st, err := serve.Open(dir, *compactEvery, retriever.WithBackend(be))
	if err != nil {
		return err
	}
	defer st.Close()
	tokb := make([]byte, 16)
	rand.Read(tokb)
	token := hex.EncodeToString(tokb)
	h := serve.New(st, serve.Config{DefaultK: *k, Token: token, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).Handler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	url := "http://" + ln.Addr().String()
	queries := make([]string, len(d.Queries))
	for i, q := range d.Queries {
		queries[i] = q.Text
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}, Timeout: time.Minute}
	fmt.Printf("serve: %s, %d tools of %s, server on %s, backend %s; %d retrieve requests per phase, concurrency %d, k=%d\n",
		what, st.R.Len(), d.Name, ln.Addr(), backend.Name(*beName), *n, *conc, *k)

	// Warm up every length bucket.
	if _, err := loadPhase(client, url, queries[:min(len(queries), 256)], 256, 4, *k); err != nil {
		return err
	}
	base := st.R.Library()
	res, err := loadPhase(client, url, queries, *n, *conc, *k)
	if err != nil {
		return err
	}
	res.print("reads only")
	if res.errors > 0 {
		return fmt.Errorf("%d errors, first: %v", res.errors, res.firstErr)
	}

	// The same with a writer.
	base = st.R.Library()
	w := &writer{client: client, url: url, token: token, interval: *interval, texts: make([]string, base.Len()), rng: mrand.New(mrand.NewPCG(1, 2))}
	for i := range w.texts {
		w.texts[i] = base.Tool(i).Text
	}
	stop := make(chan struct{})
	wdone := make(chan error, 1)
	go func() { wdone <- w.run(stop) }()
	res2, err := loadPhase(client, url, queries, *n, *conc, *k)
	close(stop)
	werr := <-wdone
	if err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("writer: %w", werr)
	}
	res2.print("reads + writer")
	bad, versions := checkConsistency(base, w.acks, res2.answers, *k)
	sort.Slice(w.lat, func(a, b int) bool { return w.lat[a] < w.lat[b] })
	fmt.Printf("  writer: %d updates (p50 %.2f ms, p99 %.2f ms), %d compactions; answers from %d library versions, %d inconsistent\n",
		len(w.acks), ms(pct(w.lat, 0.5)), ms(pct(w.lat, 0.99)), st.Compactions(), versions, bad)
	if res2.errors > 0 {
		return fmt.Errorf("%d errors with the writer, first: %v", res2.errors, res2.firstErr)
	}
	if bad > 0 {
		return fmt.Errorf("%d answers inconsistent with their library version", bad)
	}
	return nil
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}

// answer is what a retrieve response says: its library version and size, and its tools.
type answer struct {
	Version     uint64 `json:"version"`
	LibrarySize int    `json:"library_size"`
	Tools       []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"tools"`
}

type phaseResult struct {
	n, errors int
	firstErr  error
	wall      time.Duration
	lat       []time.Duration
	answers   []answer
}

func (r *phaseResult) print(label string) {
	sort.Slice(r.lat, func(a, b int) bool { return r.lat[a] < r.lat[b] })
	fmt.Printf("  %-15s %d requests, %d errors, %.0f QPS, latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		label, r.n, r.errors, float64(r.n)/r.wall.Seconds(), ms(pct(r.lat, 0.5)), ms(pct(r.lat, 0.9)), ms(pct(r.lat, 0.99)), ms(r.lat[len(r.lat)-1]))
}

// loadPhase sends n retrieve requests (queries in turn) from conc clients.
func loadPhase(client *http.Client, url string, queries []string, n, conc, k int) (*phaseResult, error) {
	res := &phaseResult{n: n, lat: make([]time.Duration, n), answers: make([]answer, n)}
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
				res.lat[i] = time.Since(t0)
				if err == nil {
					err = json.Unmarshal(b, &res.answers[i])
				}
				if err == nil && len(res.answers[i].Tools) != min(k, res.answers[i].LibrarySize) {
					err = fmt.Errorf("%d tools, want %d", len(res.answers[i].Tools), k)
				}
				if err != nil {
					mu.Lock()
					if res.errors++; res.firstErr == nil {
						res.firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	return res, nil
}

// ack is an acknowledged update: the version it made, the tools put (id → title) and the
// ids deleted.
type ack struct {
	version uint64
	put     map[string]string
	del     []string
}

// writer adds tools (copies of indexed tools' texts), replaces and deletes them.
type writer struct {
	client   *http.Client
	url      string
	token    string
	interval time.Duration
	texts    []string
	rng      *mrand.Rand
	acks     []ack
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
		a := ack{put: map[string]string{}}
		switch c := w.rng.IntN(4); {
		case c == 0 && len(live) > 0 || len(live) > 50:
			j := w.rng.IntN(len(live))
			a.del = []string{live[j]}
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
			a.put[id] = title
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
		a.version = up.Version
		w.acks = append(w.acks, a)
	}
}

// checkConsistency replays the acknowledged updates over base, version by version, and
// counts the answers whose tools, titles or library size differ from their version's.
func checkConsistency(base *retriever.Library, acks []ack, answers []answer, k int) (bad, versions int) {
	lib := map[string]string{}
	for i := 0; i < base.Len(); i++ {
		lib[base.Tool(i).ID] = base.Tool(i).Title
	}
	sort.Slice(acks, func(a, b int) bool { return acks[a].version < acks[b].version })
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
		for j < len(acks) && acks[j].version <= a.Version {
			if acks[j].version != v+1 {
				bad++ // a version made by no acknowledged update
			}
			for _, id := range acks[j].del {
				delete(lib, id)
			}
			for id, t := range acks[j].put {
				lib[id] = t
			}
			v = acks[j].version
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

// copyTree copies the regular files of src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
