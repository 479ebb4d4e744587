package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/internal/pgtest"
)

// TestUsageLogPG: two gateway replicas over one PostgreSQL database (each with the index it
// built itself) log their searches, calls and feedback into its usage_log table; with
// PostgreSQL down, searches are still answered and feedback fails with 503 rather than
// being lost silently; once it is back, feedback is recorded again.
func TestUsageLogPG(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	a := newFixture(t, fixtureOpts{database: url})
	b := newFixture(t, fixtureOpts{database: url})
	var sr gateway.SearchResult
	if s, body := a.do(t, "POST", "/v1/search", "", map[string]any{"query": "echo a message", "k": 3}, &sr); s != 200 {
		t.Fatalf("search on a: %d %s", s, body)
	}
	b.do(t, "POST", "/v1/call", "", map[string]any{"name": "fake.echo", "arguments": map[string]any{"message": "a"}, "search_id": sr.SearchID}, nil)
	if s, body := b.do(t, "POST", "/v1/feedback", "", map[string]any{"name": "fake.echo", "success": true, "search_id": sr.SearchID}, nil); s != 200 {
		t.Fatalf("feedback on b: %d %s", s, body)
	}
	rows := usageRows(t, url)
	want := []string{"a search " + sr.SearchID, "b call " + sr.SearchID, "b feedback " + sr.SearchID}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("usage_log:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !srv.Local() {
		return
	}
	srv.Stop(t)
	deadline := time.Now().Add(5 * time.Second)
	for a.store.StoreErr() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s, body := a.do(t, "POST", "/v1/search", "", map[string]any{"query": "echo a message", "k": 3}, &sr); s != 200 {
		t.Fatalf("search with PostgreSQL down: %d %s", s, body)
	}
	spooled := sr.SearchID
	spool := filepath.Join(a.state, gateway.UsageSpoolFile)
	if b, err := os.ReadFile(spool); err != nil || !strings.Contains(string(b), spooled) {
		t.Fatalf("search with PostgreSQL down: spool %s holds %q (%v), want its search %s", spool, b, err, spooled)
	}
	s, body := a.do(t, "POST", "/v1/feedback", "", map[string]any{"name": "fake.echo", "success": false}, nil)
	if s != 503 || !strings.Contains(body, "unreachable") {
		t.Fatalf("feedback with PostgreSQL down: %d %s; want 503 saying the store is unreachable", s, body)
	}
	srv.Restart(t)
	deadline = time.Now().Add(20 * time.Second)
	for {
		s, body = a.do(t, "POST", "/v1/feedback", "", map[string]any{"name": "fake.echo", "success": false, "note": "after"}, nil)
		if s == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s != 200 {
		t.Fatalf("feedback after PostgreSQL restarted: %d %s", s, body)
	}
	// The search spooled while it was down reaches usage_log, once, and the spool is removed.
	deadline = time.Now().Add(10 * time.Second)
	for {
		n := 0
		for _, r := range usageRows(t, url) {
			if r == "a search "+spooled {
				n++
			}
		}
		_, err := os.Stat(spool)
		if n == 1 && os.IsNotExist(err) {
			break
		}
		if n > 1 || time.Now().After(deadline) {
			t.Fatalf("spooled search %s in usage_log %d times (want 1), spool file: %v", spooled, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// usageRows returns usage_log's rows as "REPLICA KIND SEARCH_ID", in insertion order,
// naming the replicas a and b by order of appearance.
func usageRows(t *testing.T, url string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgtest.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rs, err := conn.Query(ctx, "SELECT replica, kind, record FROM usage_log ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	names := map[string]string{}
	var out []string
	for rs.Next() {
		var replica, kind string
		var rec []byte
		if err := rs.Scan(&replica, &kind, &rec); err != nil {
			t.Fatal(err)
		}
		var r gateway.UsageRecord
		if err := json.Unmarshal(rec, &r); err != nil || r.Kind != kind {
			t.Fatalf("record %s: %v", rec, err)
		}
		if _, ok := names[replica]; !ok {
			names[replica] = string(rune('a' + len(names)))
		}
		out = append(out, names[replica]+" "+kind+" "+r.SearchID)
	}
	return out
}

// TestListChangedPG: a tool an upstream of replica a adds (a re-import) reaches replica b
// with its full definition, and a replica started later from the old library file serves
// the database's library rather than reverting it.
func TestListChangedPG(t *testing.T) {
	url := pgtest.Start(t).NewDB(t)
	a := newFixture(t, fixtureOpts{database: url})
	b := newFixture(t, fixtureOpts{database: url})
	n0 := len(b.gw.Library().Tools)
	if text, isErr := callText(t, a.mcpClient(t, ""), "fake.grow", nil); isErr || text != "grown" {
		t.Fatalf("grow: %q", text)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, def := b.gw.Tool("fake.weather_forecast")
		_, idx := b.store.R.Library().Lookup("fake.weather_forecast")
		if def && idx {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool a re-imported did not reach b (definition %v, index %v); log:\n%s", def, idx, b.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var sr gateway.SearchResult
	b.do(t, "POST", "/v1/search", "", map[string]any{"query": "weather forecast for a city", "k": 100}, &sr)
	found := false
	for _, d := range sr.Tools {
		if d.Name == "fake.weather_forecast" {
			found = strings.Contains(string(d.InputSchema), "city")
		}
	}
	if !found {
		t.Fatal("b's search does not give the new tool with its input schema")
	}
	if n := len(b.gw.Library().Tools); n != n0+1 {
		t.Fatalf("b's library: %d tools, want %d", n, n0+1)
	}
	c := newFixture(t, fixtureOpts{database: url}) // its library file lacks the tool
	if _, ok := c.gw.Tool("fake.weather_forecast"); !ok {
		t.Fatal("a replica started later does not serve the shared library")
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := a.store.R.Library().Lookup("fake.weather_forecast"); !ok {
		t.Fatal("a replica started later from the old library file reverted the index")
	}
}
