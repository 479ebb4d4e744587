package usage_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/pgtest"
	"github.com/toolret/toolret/toolindex/store/pgstore"
	"github.com/toolret/toolret/usage"
)

// TestReadDB reads the usage_log table replicas write (serve -database): the same examples
// as from the file, a malformed row named by its id, and no password in the error.
func TestReadDB(t *testing.T) {
	s := pgtest.Start(t)
	dbURL := s.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgtest.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ms, err := pgstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("migration %s: %v", m.Name, err)
		}
	}
	rows := []string{
		`{"kind":"search","search_id":"s1","query":"echo it","shown":["a","b","c"]}`,
		`{"kind":"call","search_id":"s1","tool":"b","outcome":"ok"}`,
	}
	for _, r := range rows {
		if _, err := conn.Exec(ctx, `INSERT INTO usage_log (at, kind, record, replica) VALUES (now(), 'x', $1::jsonb, 'r1')`, r); err != nil {
			t.Fatal(err)
		}
	}
	ex, _, st, err := usage.ReadExamples(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	want := []data.Example{{Query: "echo it", Positives: []string{"b"}, Negatives: []string{"a", "c"}, Source: "usage"}}
	if !reflect.DeepEqual(ex, want) {
		t.Fatalf("examples %+v (%v), want %+v", ex, st, want)
	}

	if _, err := conn.Exec(ctx, `INSERT INTO usage_log (at, kind, record, replica) VALUES (now(), 'x', '{"kind":"nonsense"}', 'r1')`); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = usage.ReadExamples(dbURL)
	if err == nil || !strings.Contains(err.Error(), "usage_log row 3") {
		t.Fatalf("malformed row: err %v, want it named by id 3", err)
	}

	bad := strings.Replace(dbURL, "://", "://nobody:s3cret@", 1)
	if strings.Count(bad, "@") > 1 { // the URL already had credentials: replace them
		bad = dbURL
	}
	_, _, _, err = usage.ReadExamples(bad + "_missing")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("missing database: err %v (want an error without the password)", err)
	}
}
