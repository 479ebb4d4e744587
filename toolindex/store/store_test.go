package store

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/toolindextest"
)

func tool(id, title string) export.ToolRecord {
	d, _ := data.Default()
	h := 0
	for _, c := range id + title {
		h = h*31 + int(c)
	}
	text := d.Tools[(h%len(d.Tools)+len(d.Tools))%len(d.Tools)].Text
	return export.ToolRecord{ID: id, Title: title, Text: title + ": " + text, Category: "live"}
}

// someUpdates applies a few updates (adds, a replacement, a deletion of an indexed tool).
func someUpdates(t *testing.T, st *Store) {
	t.Helper()
	base := st.R.Library().Tool(0).ID
	for _, u := range []struct {
		put []export.ToolRecord
		del []string
	}{
		{[]export.ToolRecord{tool("a", "A"), tool("b", "B")}, nil},
		{[]export.ToolRecord{tool("a", "A2")}, []string{base}},
		{[]export.ToolRecord{tool("c", "C")}, []string{"b"}},
	} {
		if _, _, err := st.Update(u.put, u.del); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDurable reopens a store that was never closed (as after kill -9): every update is
// there; a torn last record is dropped; damage before it is refused; Close compacts into an
// index that toolindex.Load verifies.
func TestDurable(t *testing.T) {
	dir := newIndex(t)
	st := openStore(t, dir, 0)
	n0 := st.R.Len()
	someUpdates(t, st)
	want := toolindextest.Snap(st.R.Library())
	if st.R.Library().Version != 3 || len(want) != n0+1 {
		t.Fatalf("version %d, %d tools", st.R.Library().Version, len(want))
	}
	// A second process cannot open the index while the first has it.
	if _, err := Open(dir, 0); err == nil || !strings.Contains(err.Error(), "is locked: another process") {
		t.Fatalf("second Open of a locked index: %v", err)
	}
	// No Close: the process "died" (its lock goes with its file).
	st.log.Close()
	st2 := openStore(t, dir, 0)
	if err := toolindextest.Same(toolindextest.Snap(st2.R.Library()), want); err != nil || st2.R.Library().Version != 3 || st2.Pending() != 3 {
		t.Fatalf("after a crash: %v (version %d, %d pending)", err, st2.R.Library().Version, st2.Pending())
	}
	st2.log.Close()

	// A torn last record (cut mid-line) was never acknowledged: dropped, and the log cut back.
	logPath := filepath.Join(dir, LogFile)
	full, _ := os.ReadFile(logPath)
	line, _ := encodeRecord(&logRecord{Seq: 4, Delete: []string{"a"}})
	for _, torn := range [][]byte{line[:len(line)/2], line[:len(line)-1], append(line[:12:12], []byte("garbage\n")...), make([]byte, 100)} {
		os.WriteFile(logPath, append(append([]byte{}, full...), torn...), 0o644)
		st3 := openStore(t, dir, 0)
		if err := toolindextest.Same(toolindextest.Snap(st3.R.Library()), want); err != nil {
			t.Fatalf("torn tail %q: %v", torn, err)
		}
		if fi, _ := os.Stat(logPath); fi.Size() != int64(len(full)) {
			t.Fatalf("torn tail %q: log of %d bytes, want %d", torn, fi.Size(), len(full))
		}
		st3.log.Close()
	}
	// Damage before the last record: refused, naming the line.
	bad := []byte(string(full))
	bad[20] ^= 1
	os.WriteFile(logPath, bad, 0o644)
	if _, err := Open(dir, 0); err == nil || !strings.Contains(err.Error(), LogFile+":1: damaged record") {
		t.Fatalf("damaged first record: %v", err)
	}
	os.WriteFile(logPath, full, 0o644)

	// A record missing (version 2 of 3): refused.
	lines := strings.SplitAfter(string(full), "\n")
	os.WriteFile(logPath, []byte(lines[0]+lines[2]), 0o644)
	if _, err := Open(dir, 0); err == nil || !strings.Contains(err.Error(), "version 3 follows version 1") {
		t.Fatalf("missing record: %v", err)
	}
	os.WriteFile(logPath, full, 0o644)

	// Close compacts: the log is emptied, the index holds the library and verifies.
	st4 := openStore(t, dir, 0)
	if err := st4.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(logPath); fi.Size() != 0 {
		t.Fatalf("log of %d bytes after Close", fi.Size())
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := toolindextest.Same(toolindextest.Snap(r.Library()), want); err != nil || r.Metadata()[VersionKey] != "3" || r.Manifest().Tools != len(want) {
		t.Fatalf("compacted index: %v, metadata %v, manifest %d tools", err, r.Metadata(), r.Manifest().Tools)
	}
	if !strings.Contains(r.Manifest().DataSource, "live updates to version 3") {
		t.Fatalf("manifest data source %q", r.Manifest().DataSource)
	}
	// Versions continue after the compaction.
	st5 := openStore(t, dir, 0)
	defer st5.Close()
	if st5.R.Library().Version != 3 {
		t.Fatalf("version %d after reopening", st5.R.Library().Version)
	}
	if next, _, err := st5.Update([]export.ToolRecord{tool("d", "D")}, nil); err != nil || next.Version != 4 {
		t.Fatalf("update after compaction: %v", err)
	}
}

// TestCompactionCrash stops a compaction at each of its steps as a crash would, then
// reopens: the library is intact, the index loads, and updates continue.
func TestCompactionCrash(t *testing.T) {
	defer func() { testHookFn = nil }()
	for _, step := range []string{"files", "manifest", "installed", "rename0", "rename1", "rename2", "truncate"} {
		t.Run(step, func(t *testing.T) {
			dir := newIndex(t)
			st := openStore(t, dir, 0)
			someUpdates(t, st)
			want := toolindextest.Snap(st.R.Library())
			crash := errors.New("crash at " + step)
			testHookFn = func(s string) error {
				if s == step {
					return crash
				}
				return nil
			}
			if err := st.Compact(); !errors.Is(err, crash) {
				t.Fatalf("Compact: %v", err)
			}
			testHookFn = nil
			st.log.Close() // the process is gone
			st2 := openStore(t, dir, 0)
			if err := toolindextest.Same(toolindextest.Snap(st2.R.Library()), want); err != nil || st2.R.Library().Version != 3 {
				t.Fatalf("after the crash: %v (version %d)", err, st2.R.Library().Version)
			}
			if st2.pending.Load() == 0 && st2.size != 0 {
				t.Fatalf("log of %d bytes kept though every record is in the index", st2.size)
			}
			if _, err := os.Stat(filepath.Join(dir, compactDir)); !os.IsNotExist(err) {
				t.Fatalf("%s left behind: %v", compactDir, err)
			}
			if _, err := toolindex.Load(dir); err != nil {
				t.Fatalf("index after recovery: %v", err)
			}
			if next, _, err := st2.Update([]export.ToolRecord{tool("d", "D")}, nil); err != nil || next.Version != 4 {
				t.Fatalf("update after recovery: %v", err)
			}
			want = toolindextest.Snap(st2.R.Library())
			st2.log.Close()
			st3 := openStore(t, dir, 0)
			defer st3.Close()
			if err := toolindextest.Same(toolindextest.Snap(st3.R.Library()), want); err != nil || st3.R.Library().Version != 4 {
				t.Fatalf("reopened: %v", err)
			}
		})
	}
}

// TestAppendFailure: an update whose log write fails is not published, and the store takes
// no more updates until a restart.
func TestAppendFailure(t *testing.T) {
	defer func() { testHookFn = nil }()
	dir := newIndex(t)
	st := openStore(t, dir, 0)
	someUpdates(t, st)
	want := toolindextest.Snap(st.R.Library())
	testHookFn = func(s string) error {
		if s == "append" {
			return errors.New("disk full")
		}
		return nil
	}
	if _, _, err := st.Update([]export.ToolRecord{tool("x", "X")}, nil); err == nil {
		t.Fatal("update with a failing log accepted")
	}
	testHookFn = nil
	if err := toolindextest.Same(toolindextest.Snap(st.R.Library()), want); err != nil {
		t.Fatalf("library changed by a failed update: %v", err)
	}
	st.failed = errors.New("simulated fsync failure")
	if _, _, err := st.Update([]export.ToolRecord{tool("y", "Y")}, nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("update after a log failure: %v", err)
	}
	st.log.Close()
	st2 := openStore(t, dir, 0)
	defer st2.Close()
	if err := toolindextest.Same(toolindextest.Snap(st2.R.Library()), want); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentUpdates runs writers and readers together, compacting every few updates:
// every answer must be exactly what its library version gives (tools of that version, with
// their scores, the best k), and every version what the updates before it make.
func TestConcurrentUpdates(t *testing.T) {
	dir := newIndex(t)
	st := openStore(t, dir, 4)
	base := st.R.Library()
	d, _ := data.Default()
	queries := []string{d.Queries[0].Text, d.Queries[3].Text, d.Queries[9].Text, "send a text message"}
	qemb, err := st.R.Embed(biencoder.QueryTower, queries)
	if err != nil {
		t.Fatal(err)
	}
	type update struct {
		put  []export.ToolRecord
		del  []string
		next *toolindex.Library
	}
	type answer struct {
		q   int
		lib *toolindex.Library
		res []toolindex.Result
	}
	var (
		mu      sync.Mutex
		updates []update
		answers []answer
		wg      sync.WaitGroup
		done    = make(chan struct{})
		errs    = make(chan error, 16)
	)
	const writers, perWriter = 3, 16
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []string
			for i := 0; i < perWriter; i++ {
				var put []export.ToolRecord
				var del []string
				switch {
				case len(mine) > 2 && rng.IntN(3) == 0:
					j := rng.IntN(len(mine))
					del = []string{mine[j]}
					mine = append(mine[:j], mine[j+1:]...)
				case len(mine) > 0 && rng.IntN(3) == 0:
					put = []export.ToolRecord{tool(mine[rng.IntN(len(mine))], fmt.Sprintf("rev %d", i))}
				default:
					id := fmt.Sprintf("w%d-%d", w, i)
					put = []export.ToolRecord{tool(id, "first"), {ID: id + "-q", Text: queries[rng.IntN(len(queries))] + " " + id}}
					mine = append(mine, id, id+"-q")
				}
				next, _, err := st.Update(put, del)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				updates = append(updates, update{put, del, next})
				mu.Unlock()
			}
		}(w)
	}
	var readers sync.WaitGroup
	for g := 0; g < 3; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				q := (g + i) % len(queries)
				lib := st.R.Library()
				res, err := st.R.RetrieveFrom(t.Context(), lib, []string{queries[q]}, 5)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				answers = append(answers, answer{q, lib, res[0]})
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Versions 1..N, one per update, each the previous one with its update applied.
	sort.Slice(updates, func(a, b int) bool { return updates[a].next.Version < updates[b].next.Version })
	if len(updates) != writers*perWriter {
		t.Fatalf("%d updates", len(updates))
	}
	want := map[string]export.ToolRecord{}
	for i := 0; i < base.Len(); i++ {
		want[base.Tool(i).ID] = base.Tool(i)
	}
	for i, u := range updates {
		if u.next.Version != uint64(i+1) {
			t.Fatalf("update %d made version %d", i, u.next.Version)
		}
		for _, id := range u.del {
			delete(want, id)
		}
		for _, r := range u.put {
			want[r.ID] = r
		}
		got := toolindextest.Snap(u.next)
		if len(got) != len(want) {
			t.Fatalf("version %d: %d tools, want %d", u.next.Version, len(got), len(want))
		}
		for id, r := range want {
			if got[id].Rec != r {
				t.Fatalf("version %d: tool %q is %+v, want %+v", u.next.Version, id, got[id].Rec, r)
			}
		}
	}
	// Every answer is its library's: scores recomputed, the k best.
	versions := map[uint64]bool{}
	for _, a := range answers {
		versions[a.lib.Version] = true
		scores := make([]float64, a.lib.Len())
		for i := range scores {
			for j, v := range qemb[a.q] {
				scores[i] += float64(v * a.lib.Embedding(i)[j])
			}
		}
		in := map[int]bool{}
		low := math.Inf(1)
		for _, x := range a.res {
			if a.lib.Tool(x.Index).ID != x.ToolID || math.Abs(scores[x.Index]-float64(x.Score)) > 1e-4 {
				t.Fatalf("version %d: result %s (index %d) score %v, recomputed %v", a.lib.Version, x.ToolID, x.Index, x.Score, scores[x.Index])
			}
			in[x.Index] = true
			low = min(low, float64(x.Score))
		}
		for i, s := range scores {
			if !in[i] && s > low+1e-4 {
				t.Fatalf("version %d: tool %s scores %v, above the answer's lowest %v", a.lib.Version, a.lib.Tool(i).ID, s, low)
			}
		}
	}
	t.Logf("%d updates, %d answers from %d library versions, %d compactions", len(updates), len(answers), len(versions), st.Compactions())
	if st.Compactions() == 0 {
		t.Fatal("no compaction ran")
	}
	// The durable state is the last version.
	last := toolindextest.Snap(st.R.Library())
	st.log.Close()
	be, _ := backend.Open("go")
	st2, err := Open(dir, 0, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := toolindextest.Same(toolindextest.Snap(st2.R.Library()), last); err != nil {
		t.Fatalf("reopened: %v", err)
	}
}

// TestSync makes an index hold a dataset's tools: new and changed tools embedded, missing
// ones deleted; the compacted index records the dataset.
func TestSync(t *testing.T) {
	dir := newIndex(t)
	st := openStore(t, dir, 0)
	lib := st.R.Library()
	var tools []export.ToolRecord
	for i := 2; i < lib.Len(); i++ { // tools 0 and 1 dropped
		tools = append(tools, lib.Tool(i))
	}
	tools[0].Text += " (changed)"
	tools = append(tools, tool("new-1", "New"))
	added, changed, deleted, err := st.Sync(tools, "fp-123", "my-data")
	if err != nil || added != 1 || changed != 1 || deleted != 2 {
		t.Fatalf("Sync: %d added, %d changed, %d deleted, %v", added, changed, deleted, err)
	}
	if a, c, d, err := st.Sync(tools, "fp-123", "my-data"); err != nil || a+c+d != 0 {
		t.Fatalf("second Sync: %d %d %d %v", a, c, d, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := toolindextest.Snap(r.Library())
	if len(got) != len(tools) || r.Manifest().DataFingerprint != "fp-123" || r.Manifest().DataSource != "my-data" || r.Metadata()["data_fingerprint"] != "fp-123" {
		t.Fatalf("%d tools, manifest %+v", len(got), r.Manifest())
	}
	for _, tl := range tools {
		if got[tl.ID].Rec != tl {
			t.Fatalf("tool %s: %+v, want %+v", tl.ID, got[tl.ID].Rec, tl)
		}
	}
	want, _ := r.Embed(biencoder.ToolTower, []string{tools[0].Text})
	for j, v := range want[0] {
		if math.Abs(float64(v-got[tools[0].ID].Emb[j])) > 1e-6 {
			t.Fatalf("changed tool not re-embedded")
		}
	}
}

// TestSyncEmbedsOnlyChanged counts the tool texts the encoder embeds: syncing an index to a
// library with one tool changed and one added embeds those two, and after a restart (the
// store reopened over the same directory, as `serve -library` reuses its zero-shot index)
// syncing to the same library embeds none, and to a library with one more change, one.
func TestSyncEmbedsOnlyChanged(t *testing.T) {
	dir := newIndex(t)
	st := openStore(t, dir, 0)
	lib := st.R.Library()
	tools := make([]export.ToolRecord, lib.Len())
	for i := range tools {
		tools[i] = lib.Tool(i)
	}
	if n := st.R.Stats().ToolTexts; n != 0 {
		t.Fatalf("opening the index embedded %d tool texts", n)
	}
	tools[3].Text += " (changed)"
	tools = append(tools, tool("new-1", "New"))
	if _, _, _, err := st.Sync(tools, "fp", "lib"); err != nil {
		t.Fatal(err)
	}
	if n := st.R.Stats().ToolTexts; n != 2 {
		t.Fatalf("one changed and one new tool of %d: %d tool texts embedded, want 2", len(tools), n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir, 0) // the restart
	defer st.Close()
	if _, _, _, err := st.Sync(tools, "fp", "lib"); err != nil {
		t.Fatal(err)
	}
	if n := st.R.Stats().ToolTexts; n != 0 {
		t.Fatalf("restart, library unchanged: %d tool texts embedded, want 0", n)
	}
	tools[5].Title += " v2"
	if _, _, _, err := st.Sync(tools, "fp", "lib"); err != nil {
		t.Fatal(err)
	}
	if n := st.R.Stats().ToolTexts; n != 1 {
		t.Fatalf("restart, one tool changed: %d tool texts embedded, want 1", n)
	}
}
