package toolindex_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/toolindex"
)

func TestWarmup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	long := ""
	for range 2000 {
		long += "tool "
	}
	maxLen, err := r.Tokens(biencoder.QueryTower, long)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, b := range tokenize.DefaultBuckets {
		if b < maxLen {
			want = append(want, b)
		}
	}
	want = append(want, maxLen)
	for _, rows := range []int{1, 4} {
		before := r.Stats()
		rep, err := r.Warmup(context.Background(), rows)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rows %d: %+v", rows, rep)
		if !slices.Equal(rep.Lengths, want) {
			t.Fatalf("rows %d: warmed lengths %v, want every bucket up to the max length %d: %v", rows, rep.Lengths, maxLen, want)
		}
		if rows := map[int]int{1: 1, 4: 3}[rows]; rep.Shapes < rows*len(want) {
			t.Fatalf("%d encoder shapes, want at least %d (%d row buckets of each length)", rep.Shapes, rows*len(want), rows)
		}
		if rep.Retrievals != len(want) {
			t.Fatalf("rows %d: %d retrievals, want one per length (%d)", rows, rep.Retrievals, len(want))
		}
		if got := r.Stats().Texts - before.Texts; got != int64(len(want)) {
			t.Fatalf("rows %d: the warm-up retrievals embedded %d query texts, want %d", rows, got, len(want))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Warmup(ctx, 1); err == nil {
		t.Fatal("warm-up with a cancelled context succeeded")
	}
}
