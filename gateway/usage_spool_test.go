package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flakyDB takes the first ok records, then fails every insert.
type flakyDB struct {
	ok   int
	took []string
}

func (d *flakyDB) AppendUsage(_ context.Context, _ time.Time, kind string, rec []byte) error {
	if len(d.took) >= d.ok {
		return errors.New("connection refused")
	}
	d.took = append(d.took, kind+" "+string(rec))
	return nil
}

// TestSpoolDrain: drain writes the spooled records in order; a database that fails part way
// leaves exactly the records not yet written in the spool; a torn last line is dropped.
func TestSpoolDrain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ok        int
		torn      bool
		wantN     int
		wantLeft  []string // search ids left in the spool; nil: spool removed
		wantError bool
	}{
		{name: "all written", ok: 10, wantN: 3},
		{name: "fails after one", ok: 1, wantN: 1, wantLeft: []string{"s2", "s3"}, wantError: true},
		{name: "down", ok: 0, wantN: 0, wantLeft: []string{"s1", "s2", "s3"}, wantError: true},
		{name: "torn last line dropped", ok: 10, torn: true, wantN: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := &flakyDB{ok: tc.ok}
			u := &dbUsage{db: db, spool: filepath.Join(t.TempDir(), UsageSpoolFile)}
			for _, id := range []string{"s1", "s2", "s3"} {
				if err := u.hold(&UsageRecord{Kind: "search", SearchID: id, Time: time.Unix(1, 0).UTC()}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.torn {
				f, err := os.OpenFile(u.spool, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte(`{"kind":"search","search_id":"s4"`))
				f.Close()
			}
			n, err := u.drain(context.Background())
			if n != tc.wantN || (err != nil) != tc.wantError {
				t.Fatalf("drain: %d written, error %v; want %d, error %v", n, err, tc.wantN, tc.wantError)
			}
			for i, rec := range db.took {
				if want := []string{"s1", "s2", "s3"}[i]; !strings.HasPrefix(rec, "search ") || !strings.Contains(rec, `"`+want+`"`) {
					t.Errorf("insert %d: %s, want search %s", i, rec, want)
				}
			}
			b, err := os.ReadFile(u.spool)
			if tc.wantLeft == nil {
				if !os.IsNotExist(err) {
					t.Fatalf("spool after a full drain: %q %v, want it removed", b, err)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != len(tc.wantLeft) {
				t.Fatalf("spool holds %d records, want %v:\n%s", len(lines), tc.wantLeft, b)
			}
			for i, id := range tc.wantLeft {
				if !strings.Contains(lines[i], `"`+id+`"`) {
					t.Errorf("spool record %d: %s, want %s", i, lines[i], id)
				}
			}
			// Records held after a failed drain append to what is left.
			if err := u.hold(&UsageRecord{Kind: "call", SearchID: "s5"}); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(u.spool); !strings.Contains(string(b), `"s5"`) || strings.Count(string(b), "\n") != len(tc.wantLeft)+1 {
				t.Fatalf("spool after one more record:\n%s", b)
			}
		})
	}
}

// TestSpoolShared: two replicas sharing a state directory share the spool; a record one holds
// after the other drained (and removed) the file is kept, not written into the removed file.
func TestSpoolShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), UsageSpoolFile)
	db := &flakyDB{ok: 10}
	a, b := &dbUsage{db: db, spool: path}, &dbUsage{db: db, spool: path}
	for i, step := range []func() error{
		func() error { return a.hold(&UsageRecord{Kind: "search", SearchID: "s1"}) },
		func() error { _, err := b.drain(context.Background()); return err },
		func() error { return a.hold(&UsageRecord{Kind: "call", SearchID: "s2"}) },
		func() error { _, err := b.drain(context.Background()); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if len(db.took) != 2 || !strings.Contains(db.took[0], `"s1"`) || !strings.Contains(db.took[1], `"s2"`) {
		t.Fatalf("database took %q, want s1 then s2", db.took)
	}
}
