package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/pgtest"
	"github.com/toolret/toolret/toolindex/store"
)

// TestPGFigures measures what docs/replicas.md reports; scripts/bench-replicas.sh runs it
// (TOOLRET_PG_FIGURES=1; TOOLRET_PG_FIGURES_MODEL names a pre-trained model whose zero-shot
// index of the embedded dataset is served, default the tests' tiny model). Three replicas over a PostgreSQL with fsync on: 200 updates through replica a's
// HTTP API, one tool each, the time from a's acknowledgement until replicas b and c serve
// the new version; then the time a replica that starts after N updates takes to load the
// library, and the time a replica that missed the notifications of N updates takes to
// apply them from the log.
func TestPGFigures(t *testing.T) {
	if os.Getenv("TOOLRET_PG_FIGURES") == "" {
		t.Skip("measures replica figures; set TOOLRET_PG_FIGURES=1 (scripts/bench-replicas.sh)")
	}
	dir := newIndex(t)
	if ref := os.Getenv("TOOLRET_PG_FIGURES_MODEL"); ref != "" {
		be, err := backend.Open("go")
		if err != nil {
			t.Fatal(err)
		}
		m, err := export.Open(context.Background(), ref, be)
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(t.TempDir(), "index")
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir}); err != nil {
			t.Fatal(err)
		}
	}
	srv := pgtest.Start(t, "fsync=on", "synchronous_commit=on")
	url := srv.NewDB(t)
	a := openReplica(t, dir, url, "a", nil)
	var mm *muted
	m := openReplica(t, dir, url, "muted", func(j store.Journal) store.Journal { mm = &muted{Journal: j, ch: make(chan struct{})}; return mm })
	b, c := openReplica(t, dir, url, "b", nil), openReplica(t, dir, url, "c", nil)
	fmt.Printf("index %s: %d tools, %d dimensions\n", dir, a.st.R.Library().Len(), a.st.R.Dim())

	const updates = 200
	var ack, prop []time.Duration
	for i := range updates {
		start := time.Now()
		var up UpdateResponse
		if s, body := call(t, a.srv, "POST", "/v1/tools", testToken, putBody(fmt.Sprintf("fig-%d", i), fmt.Sprintf("F%d", i)), &up); s != 200 {
			t.Fatalf("update %d: %d %s", i, s, body)
		}
		acked := time.Now()
		ack = append(ack, acked.Sub(start))
		pending := []*replica{b, c}
		for len(pending) > 0 {
			for k := 0; k < len(pending); k++ {
				if pending[k].st.R.Library().Version >= up.Version {
					prop = append(prop, time.Since(acked))
					pending = slices.Delete(pending, k, k+1)
					k--
				}
			}
			if time.Since(acked) > 5*time.Second {
				t.Fatalf("update %d not served by every replica after 5s", i)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	fmt.Printf("update acknowledged by a (embed + commit), %d updates: p50 %s p99 %s max %s\n", updates, pct(ack, 50), pct(ack, 99), pct(ack, 100))
	fmt.Printf("propagation ack on a -> served by b and c, %d samples: p50 %s p99 %s max %s\n", len(prop), pct(prop, 50), pct(prop, 99), pct(prop, 100))

	const n = 1000
	head := a.st.R.Library().Version
	for i := range n - updates {
		if _, _, err := a.st.Update([]export.ToolRecord{tool(fmt.Sprintf("fig-%d", updates+i), "G")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	head += n - updates
	start := time.Now()
	late := openReplica(t, dir, url, "late", nil)
	open := time.Since(start)
	start = time.Now()
	if _, err := late.pg.Load(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	if late.st.R.Library().Version != head {
		t.Fatalf("late replica at version %d, want %d", late.st.R.Library().Version, head)
	}
	fmt.Printf("late replica after %d updates (%d tools): starts in %s, of which the library snapshot from PostgreSQL %s\n", head, late.st.R.Library().Len(), open.Round(time.Millisecond), load.Round(time.Millisecond))
	start = time.Now()
	mm.unmute()
	if _, ok := waitFor(time.Minute, func() bool { return m.st.R.Library().Version == head }); !ok {
		t.Fatal("the muted replica did not catch up")
	}
	fmt.Printf("replica that missed %d updates' notifications catches up from the log in %s\n", head, time.Since(start).Round(time.Millisecond))
}

// pct is the p-th percentile of ds (100: the largest), rounded for printing.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return s[max(i, 0)].Round(10 * time.Microsecond)
}
