package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/pgtest"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
	"github.com/toolret/toolret/toolindex/store/pgstore"
	"github.com/toolret/toolret/toolindex/toolindextest"
)

// replica is a server of a library shared through PostgreSQL, in this process.
type replica struct {
	name string
	st   *store.Store
	pg   *pgstore.Store
	srv  *httptest.Server
	logs *syncBuffer
}

// openReplica opens index dir over the database at url and serves it over HTTP. wrap, if
// not nil, wraps the journal the store sees.
func openReplica(t testing.TB, dir, url, name string, wrap func(store.Journal) store.Journal) *replica {
	t.Helper()
	return openReplicaKeep(t, dir, url, name, wrap, 0)
}

// openReplicaKeep is openReplica whose commits keep the newest keep versions of the log.
func openReplicaKeep(t testing.TB, dir, url, name string, wrap func(store.Journal) store.Journal, keep int) *replica {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(r.logs, nil))
	r.pg, err = pgstore.Open(context.Background(), url, pgstore.Options{Name: name, Poll: 500 * time.Millisecond, Log: log, LogKeep: keep})
	if err != nil {
		t.Fatal(err)
	}
	var j store.Journal = r.pg
	if wrap != nil {
		j = wrap(r.pg)
	}
	if r.st, err = store.OpenShared(dir, j, toolindex.WithBackend(be)); err != nil {
		r.pg.Close()
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(New(r.st, Config{Token: testToken, Logger: log}).Handler())
	t.Cleanup(func() {
		r.srv.Close()
		r.st.Close()
	})
	return r
}

// pgDB returns a throwaway PostgreSQL server and the URL of a fresh database in it.
func pgDB(t testing.TB) (*pgtest.Server, string) {
	t.Helper()
	srv := pgtest.Start(t)
	return srv, srv.NewDB(t)
}

// putBody is the body of POST /v1/tools putting one tool.
func putBody(id, title string) []byte {
	t := tool(id, title)
	return mustJSON(map[string]any{"tools": []map[string]any{{"id": t.ID, "title": t.Title, "text": t.Text, "hierarchy": map[string]string{"category": t.Category}}}})
}

// waitFor polls cond every millisecond until it holds or limit passes; it returns the time
// it took, or false.
func waitFor(limit time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > limit {
			return time.Since(start), false
		}
		time.Sleep(time.Millisecond)
	}
}

// has reports whether r serves tool id with title ("" : absent).
func (r *replica) has(id, title string) bool {
	lib := r.st.R.Library()
	i, ok := lib.Lookup(id)
	if title == "" {
		return !ok
	}
	return ok && lib.Tool(i).Title == title
}

// TestPGReplicas: an update acknowledged by one of three replicas is served by the others
// within a second; concurrent updates on all three (commits that collide and are retried
// on top of the others') all land, in one order every replica serves.
func TestPGReplicas(t *testing.T) {
	_, url := pgDB(t)
	dir := newIndex(t)
	rs := []*replica{openReplica(t, dir, url, "a", nil), openReplica(t, dir, url, "b", nil), openReplica(t, dir, url, "c", nil)}
	n0 := rs[0].st.R.Library().Len()
	var up UpdateResponse
	if s, b := call(t, rs[0].srv, "POST", "/v1/tools", testToken, putBody("live/x", "X"), &up); s != 200 || up.Version != 1 || up.LibrarySize != n0+1 {
		t.Fatalf("put on a: %d %s", s, b)
	}
	for _, r := range rs[1:] {
		if d, ok := waitFor(time.Second, func() bool { return r.has("live/x", "X") }); !ok {
			t.Fatalf("replica %s does not serve the update acknowledged by a after %v", r.name, d)
		}
		var got ToolOut
		if s, b := call(t, r.srv, "GET", "/v1/tools/live%2Fx", "", nil, &got); s != 200 || got.Title != "X" || got.Version != 1 {
			t.Fatalf("GET on %s: %d %s", r.name, s, b)
		}
	}
	if s, b := call(t, rs[1].srv, "DELETE", "/v1/tools/live%2Fx", testToken, nil, &up); s != 200 || up.Version != 2 {
		t.Fatalf("delete on b: %d %s", s, b)
	}
	for _, r := range []*replica{rs[0], rs[2]} {
		if d, ok := waitFor(time.Second, func() bool { return r.has("live/x", "") }); !ok {
			t.Fatalf("replica %s still serves the tool b deleted after %v", r.name, d)
		}
	}
	// A delete of a tool another replica deleted is a 404 on every replica.
	if s, b := call(t, rs[2].srv, "DELETE", "/v1/tools/live%2Fx", testToken, nil, nil); s != 404 {
		t.Fatalf("second delete on c: %d %s", s, b)
	}

	const each = 15
	var wg sync.WaitGroup
	errs := make(chan error, 3*each)
	versions := make(chan uint64, 3*each)
	for i, r := range rs {
		wg.Go(func() {
			for k := range each {
				var u UpdateResponse
				req, _ := http.NewRequest("POST", r.srv.URL+"/v1/tools", strings.NewReader(string(putBody(fmt.Sprintf("live/%d-%d", i, k), fmt.Sprintf("T%d-%d", i, k)))))
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("put on %s: status %d: %s", r.name, resp.StatusCode, body)
					return
				}
				json.Unmarshal(body, &u)
				versions <- u.Version
			}
		})
	}
	wg.Wait()
	close(errs)
	close(versions)
	for err := range errs {
		t.Fatal(err)
	}
	var vs []uint64
	for v := range versions {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	for i, v := range vs {
		if v != uint64(3+i) {
			t.Fatalf("acknowledged versions %v: want each of 3..%d once", vs, 2+3*each)
		}
	}
	head := uint64(2 + 3*each)
	for _, r := range rs {
		if d, ok := waitFor(time.Second, func() bool { return r.st.R.Library().Version == head }); !ok {
			t.Fatalf("replica %s at version %d after %v, want %d", r.name, r.st.R.Library().Version, d, head)
		}
	}
	want := toolindextest.Snap(rs[0].st.R.Library())
	if len(want) != n0+3*each {
		t.Fatalf("%d tools, want %d", len(want), n0+3*each)
	}
	for i := range 3 {
		for k := range each {
			if !rs[0].has(fmt.Sprintf("live/%d-%d", i, k), fmt.Sprintf("T%d-%d", i, k)) {
				t.Fatalf("acknowledged tool live/%d-%d missing", i, k)
			}
		}
	}
	for _, r := range rs[1:] {
		if err := toolindextest.Same(toolindextest.Snap(r.st.R.Library()), want); err != nil {
			t.Fatalf("replica %s differs from a: %v", r.name, err)
		}
	}
}

// muted is a journal whose Changed signals are held back until unmute: its store hears
// of nothing and must catch up from the log by version.
type muted struct {
	store.Journal
	ch chan struct{}
}

func (m *muted) Changed() <-chan struct{} { return m.ch }
func (m *muted) unmute()                  { m.ch <- struct{}{} }

// TestPGCatchUp: a replica that starts late loads the library as it is; a replica that
// missed every notification catches up from the log by version at the next signal.
func TestPGCatchUp(t *testing.T) {
	_, url := pgDB(t)
	dir := newIndex(t)
	a := openReplica(t, dir, url, "a", nil)
	var mb *muted
	b := openReplica(t, dir, url, "b", func(j store.Journal) store.Journal { mb = &muted{Journal: j, ch: make(chan struct{})}; return mb })
	base := a.st.R.Library().Tool(0).ID
	for i := range 40 {
		put := []export.ToolRecord{tool(fmt.Sprintf("late/%d", i), fmt.Sprintf("L%d", i)), tool(fmt.Sprintf("late/%d", i/2), fmt.Sprintf("L%d'", i))}
		if i%2 == 0 {
			put = put[:1]
		}
		var del []string
		if i == 7 {
			del = []string{base}
		}
		if _, _, err := a.st.Update(put, del); err != nil {
			t.Fatal(err)
		}
	}
	want := toolindextest.Snap(a.st.R.Library())
	late := openReplica(t, dir, url, "late", nil)
	if v := late.st.R.Library().Version; v != 40 {
		t.Fatalf("late replica at version %d, want 40", v)
	}
	if err := toolindextest.Same(toolindextest.Snap(late.st.R.Library()), want); err != nil {
		t.Fatalf("late replica: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if v := b.st.R.Library().Version; v != 0 {
		t.Fatalf("muted replica at version %d: it heard of updates", v)
	}
	mb.unmute()
	if d, ok := waitFor(time.Second, func() bool { return b.st.R.Library().Version == 40 }); !ok {
		t.Fatalf("muted replica at version %d %v after the signal, want 40", b.st.R.Library().Version, d)
	}
	if err := toolindextest.Same(toolindextest.Snap(b.st.R.Library()), want); err != nil {
		t.Fatalf("replica that caught up: %v", err)
	}
	if n := b.st.Applied(); n != 40 {
		t.Fatalf("replica applied %d logged updates, want 40", n)
	}
	// The late replica's update is served by a (through a notification).
	if _, _, err := late.st.Update([]export.ToolRecord{tool("late/new", "N")}, nil); err != nil {
		t.Fatal(err)
	}
	if d, ok := waitFor(time.Second, func() bool { return a.has("late/new", "N") }); !ok {
		t.Fatalf("a does not serve the late replica's update after %v", d)
	}
}

// TestPGLogKeep: with LogKeep 10 the log holds the newest 10 versions after 40 updates; a
// replica that missed them all finds the gap and reloads the library from library_tools,
// ending on the same library as the replica that wrote them, and then applies new updates
// from the log again.
func TestPGLogKeep(t *testing.T) {
	_, url := pgDB(t)
	dir := newIndex(t)
	a := openReplicaKeep(t, dir, url, "a", nil, 10)
	var mb *muted
	b := openReplica(t, dir, url, "b", func(j store.Journal) store.Journal { mb = &muted{Journal: j, ch: make(chan struct{})}; return mb })
	for i := range 40 {
		if _, _, err := a.st.Update([]export.ToolRecord{tool(fmt.Sprintf("kept/%d", i%15), fmt.Sprintf("K%d", i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var n, lo, hi int64
	if err := a.pg.Pool().QueryRow(context.Background(), "SELECT count(*), min(version), max(version) FROM library_log").Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n != 10 || lo != 31 || hi != 40 {
		t.Fatalf("library_log holds %d rows, versions %d to %d; want 10, 31 to 40", n, lo, hi)
	}
	if _, err := a.pg.Since(context.Background(), 5); !errors.Is(err, store.ErrGap) {
		t.Fatalf("Since(5) with versions 6 to 30 pruned: %v, want ErrGap", err)
	}
	want := toolindextest.Snap(a.st.R.Library())
	mb.unmute()
	if d, ok := waitFor(2*time.Second, func() bool { return b.st.R.Library().Version == 40 }); !ok {
		t.Fatalf("replica behind the kept log at version %d %v after the signal, want 40", b.st.R.Library().Version, d)
	}
	if err := toolindextest.Same(toolindextest.Snap(b.st.R.Library()), want); err != nil {
		t.Fatalf("replica reloaded past the kept log: %v", err)
	}
	if k := b.st.Applied(); k != 0 {
		t.Fatalf("replica applied %d logged updates, want 0 (a reload)", k)
	}
	if _, _, err := a.st.Update([]export.ToolRecord{tool("kept/new", "N")}, nil); err != nil {
		t.Fatal(err)
	}
	mb.unmute()
	if d, ok := waitFor(2*time.Second, func() bool { return b.has("kept/new", "N") }); !ok {
		t.Fatalf("b does not serve the update after the reload (%v)", d)
	}
	if k := b.st.Applied(); k != 1 {
		t.Fatalf("replica applied %d logged updates after the reload, want 1", k)
	}
}

// TestPGConcurrentStart: replicas starting together on an empty database apply each
// migration once and seed the library once.
func TestPGConcurrentStart(t *testing.T) {
	_, url := pgDB(t)
	dir := newIndex(t)
	ms, err := pgstore.Migrations()
	if err != nil || len(ms) == 0 {
		t.Fatal(ms, err)
	}
	const n = 5
	rs := make([]*replica, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { rs[i] = openReplica(t, dir, url, fmt.Sprintf("r%d", i), nil) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var applied []int
	for _, r := range rs {
		applied = append(applied, r.pg.Migrated()...)
	}
	slices.Sort(applied)
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	if !slices.Equal(applied, want) {
		t.Fatalf("migrations applied %v by %d replicas starting together, want %v once each", applied, n, want)
	}
	ctx := context.Background()
	var rows, heads, tools int
	pool := rs[0].pg.Pool()
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil || rows != len(ms) {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", rows, err, len(ms))
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM library_head").Scan(&heads); err != nil || heads != 1 {
		t.Fatalf("library_head has %d rows (%v)", heads, err)
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM library_tools").Scan(&tools); err != nil || tools != rs[0].st.R.Library().Len() {
		t.Fatalf("library_tools has %d rows (%v), want %d", tools, err, rs[0].st.R.Library().Len())
	}
	// A replica opened later applies no migration.
	late := openReplica(t, dir, url, "late", nil)
	if m := late.pg.Migrated(); len(m) != 0 {
		t.Fatalf("a later replica applied migrations %v", m)
	}
}

// TestPGRestartUnderLoad stops PostgreSQL under a load of updates and queries: updates
// fail fast with 503 saying why, queries keep being answered, and once PostgreSQL is back
// updates succeed again without restarting the replicas; nothing acknowledged is lost.
func TestPGRestartUnderLoad(t *testing.T) {
	srv, url := pgDB(t)
	if !srv.Local() {
		t.Skip("needs the tests' own PostgreSQL to restart it")
	}
	dir := newIndex(t)
	a, b := openReplica(t, dir, url, "a", nil), openReplica(t, dir, url, "b", nil)
	type result struct {
		status int
		d      time.Duration
		body   string
		after  bool // sent once the replicas had seen the database down
	}
	var (
		mu      sync.Mutex
		puts    []result
		acked   []string
		queries atomic.Int64
		qfail   atomic.Int64
		stop    atomic.Bool
		wg      sync.WaitGroup
		seq     atomic.Int64
		outage  atomic.Bool // the replicas have seen the database down
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				id := fmt.Sprintf("load/%d", seq.Add(1))
				after := outage.Load()
				start := time.Now()
				s, body, err := post(client, "POST", a.srv.URL+"/v1/tools", json.RawMessage(putBody(id, "P")))
				r := result{s, time.Since(start), string(body), after}
				if err != nil {
					r.status, r.body = -1, err.Error()
				}
				mu.Lock()
				puts = append(puts, r)
				if s == 200 {
					acked = append(acked, id)
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				s, body, err := post(client, "POST", b.srv.URL+"/v1/retrieve", map[string]any{"query": "book a table for dinner", "k": 3})
				queries.Add(1)
				if err != nil || s != 200 {
					qfail.Add(1)
					t.Errorf("query during the outage: %d %s %v", s, body, err)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	srv.Stop(t)
	if d, ok := waitFor(5*time.Second, func() bool { return a.st.StoreErr() != nil && b.st.StoreErr() != nil }); !ok {
		t.Fatalf("replicas did not notice PostgreSQL stopped in %v", d)
	}
	outage.Store(true)
	if _, m := call(t, a.srv, "GET", "/metrics", "", nil, nil); !strings.Contains(string(m), "\ntoolret_store_up 0\n") {
		t.Errorf("/metrics with PostgreSQL down: no toolret_store_up 0")
	}
	time.Sleep(time.Second)
	srv.Restart(t)
	d, ok := waitFor(20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(puts) > 0 && puts[len(puts)-1].status == 200 && puts[len(puts)-1].after
	})
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if !ok {
		t.Fatalf("updates still failing %v after PostgreSQL restarted:\n%s", d, a.logs.String())
	}
	t.Logf("updates recovered %v after PostgreSQL restarted; %d queries answered meanwhile", d, queries.Load())
	var n503 int
	var slow time.Duration
	for _, r := range puts {
		switch {
		case r.status == 200:
		case r.status == 503:
			n503++
			if !strings.Contains(r.body, "unreachable") {
				t.Errorf("503 body %s: want it to say the store is unreachable", r.body)
			}
			if r.after {
				slow = max(slow, r.d)
			}
		default:
			t.Errorf("update answered %d %s", r.status, r.body)
		}
	}
	if n503 == 0 {
		t.Fatal("no update failed while PostgreSQL was down")
	}
	if slow > 500*time.Millisecond {
		t.Errorf("a 503 took %v: want failing fast", slow)
	}
	t.Logf("%d updates, %d answered 503 (slowest once the replica knew: %v)", len(puts), n503, slow)
	if qfail.Load() > 0 || queries.Load() == 0 {
		t.Fatalf("%d of %d queries failed", qfail.Load(), queries.Load())
	}
	for _, r := range []*replica{a, b} {
		for _, id := range acked {
			if _, ok := waitFor(time.Second, func() bool { return r.has(id, "P") }); !ok {
				t.Fatalf("replica %s lost acknowledged tool %s", r.name, id)
			}
		}
	}
	if _, m := call(t, b.srv, "GET", "/metrics", "", nil, nil); !strings.Contains(string(m), "\ntoolret_store_up 1\n") || strings.Contains(string(m), "\ntoolret_replicated_updates_total 0\n") {
		t.Errorf("/metrics of b after the restart: want toolret_store_up 1 and replicated updates")
	}
	// Both replicas take updates again.
	if s, body := call(t, b.srv, "POST", "/v1/tools", testToken, putBody("after/b", "B"), nil); s != 200 {
		t.Fatalf("update on b after the restart: %d %s", s, body)
	}
	if _, ok := waitFor(time.Second, func() bool { return a.has("after/b", "B") }); !ok {
		t.Fatal("a does not serve b's update after the restart")
	}
}

// TestPGKill9Replica kills a replica process (SIGKILL) in the middle of a stream of
// concurrent updates: every update it acknowledged is served by the other replica and by
// the killed one once restarted (the one in flight may or may not be).
func TestPGKill9Replica(t *testing.T) {
	bin := buildServe(t)
	_, url := pgDB(t)
	dir := newIndex(t)
	pa := startServe(t, bin, dir, "-database", url)
	pb := startServe(t, bin, dir, "-database", url)
	defer pb.cmd.Process.Kill()
	client := &http.Client{Timeout: 30 * time.Second}
	var (
		mu    sync.Mutex
		acked []string
		seq   atomic.Int64
		wg    sync.WaitGroup
	)
	for range 6 {
		wg.Go(func() {
			for {
				id := fmt.Sprintf("kill-%d", seq.Add(1))
				s, _, err := post(client, "POST", pa.url+"/v1/tools", json.RawMessage(putBody(id, "K")))
				if err != nil {
					return // killed
				}
				if s != 200 {
					t.Errorf("update on the replica: status %d", s)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		})
	}
	if _, ok := waitFor(30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 30 }); !ok {
		t.Fatalf("too few updates acknowledged:\n%s", pa.logs.String())
	}
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // at a random point of the updates under way
	pa.cmd.Process.Kill()
	wg.Wait()
	pa.wait(t, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	check := func(p *proc, limit time.Duration) {
		t.Helper()
		for _, id := range acked {
			_, ok := waitFor(limit, func() bool {
				s, b, err := post(client, "GET", p.url+"/v1/tools/"+id, nil)
				var got ToolOut
				json.Unmarshal(b, &got)
				return err == nil && s == 200 && got.Title == "K"
			})
			if !ok {
				t.Fatalf("acknowledged tool %s lost after the kill", id)
			}
		}
	}
	check(pb, time.Second)
	var hb struct{ Version uint64 }
	_, b, _ := post(client, "GET", pb.url+"/healthz", nil)
	json.Unmarshal(b, &hb)
	if hb.Version < uint64(len(acked)) || hb.Version > uint64(len(acked))+6 {
		t.Fatalf("version %d after %d acknowledged updates (at most 6 in flight)", hb.Version, len(acked))
	}
	pa2 := startServe(t, bin, dir, "-database", url)
	defer pa2.cmd.Process.Kill()
	check(pa2, 0)
	var ha struct{ Version uint64 }
	_, b, _ = post(client, "GET", pa2.url+"/healthz", nil)
	json.Unmarshal(b, &ha)
	if ha.Version != hb.Version {
		t.Fatalf("restarted replica at version %d, the other at %d", ha.Version, hb.Version)
	}
	t.Logf("%d updates acknowledged before the kill; library at version %d", len(acked), hb.Version)
}
