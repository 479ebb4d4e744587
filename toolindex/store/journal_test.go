package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex"
)

// rivalJournal is an in-memory Journal where other servers win the next rivals commit
// races: each of those commits first appends a rival's version and reports ErrConflict.
type rivalJournal struct {
	mu     sync.Mutex
	head   uint64
	log    []*Update
	rivals int
	emb    []float32 // the rivals' tools' embedding
}

func (j *rivalJournal) Load(_ context.Context, seed *Snapshot) (*Snapshot, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.head = seed.Version
	j.emb = seed.Emb[0]
	return seed, nil
}

func (j *rivalJournal) Since(_ context.Context, after uint64) ([]*Update, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*Update
	for _, u := range j.log {
		if u.Version > after {
			out = append(out, u)
		}
	}
	return out, nil
}

func (j *rivalJournal) Commit(_ context.Context, u *Update) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.rivals > 0 {
		j.rivals--
		j.head++
		id := fmt.Sprintf("rival-%d", j.head)
		j.log = append(j.log, &Update{Version: j.head, Put: []export.ToolRecord{tool(id, id)}, Emb: [][]float32{j.emb}})
	}
	if u.Version != j.head+1 {
		return fmt.Errorf("version %d: %w", u.Version, ErrConflict)
	}
	j.head++
	j.log = append(j.log, u)
	return nil
}

func (j *rivalJournal) Changed() <-chan struct{} { return nil }
func (j *rivalJournal) Err() error               { return nil }
func (j *rivalJournal) Close() error             { return nil }

// TestSharedUpdateRaces: an update that loses commit races to other servers catches up
// and retries for as long as its patience lasts (more lost races than the 20 attempts
// that once bounded it, each server's tools all kept); past its patience it fails with
// ErrBusy (a 503 to serve's clients) and changes nothing.
func TestSharedUpdateRaces(t *testing.T) {
	for _, c := range []struct {
		name     string
		rivals   int
		patience time.Duration
		wantErr  error
	}{
		{"no race", 0, commitPatience, nil},
		{"25 lost races", 25, commitPatience, nil},
		{"others never stop", 1 << 30, 150 * time.Millisecond, ErrBusy},
	} {
		t.Run(c.name, func(t *testing.T) {
			be, err := backend.Open("go")
			if err != nil {
				t.Fatal(err)
			}
			j := &rivalJournal{rivals: c.rivals}
			st, err := OpenShared(newIndex(t), j, toolindex.WithBackend(be))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			st.shared.patience = c.patience
			base := st.R.Library().Version
			next, _, err := st.Update([]export.ToolRecord{tool("mine", "Mine")}, nil)
			lib := st.R.Library()
			_, has := lib.Lookup("mine")
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				if has {
					t.Fatal("a failed update's tool is served")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := base + uint64(c.rivals) + 1; next.Version != want || lib.Version != want {
				t.Fatalf("version %d (serving %d), want %d", next.Version, lib.Version, want)
			}
			if !has {
				t.Fatal("the update's tool is not served")
			}
			for v := base + 1; v <= base+uint64(c.rivals); v++ {
				if _, ok := lib.Lookup(fmt.Sprintf("rival-%d", v)); !ok {
					t.Fatalf("rival version %d's tool missing", v)
				}
			}
			if got := slices.IndexFunc(j.log, func(u *Update) bool { return len(u.Put) > 0 && u.Put[0].ID == "mine" }); got != c.rivals {
				t.Fatalf("the update is log entry %d, want %d", got, c.rivals)
			}
		})
	}
}
