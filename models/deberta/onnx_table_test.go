package deberta

import "testing"

// TestBucketTable checks the ONNX graph's relative-position table, gathered at i - j + M - 1,
// gives Encode's rows (relIndex) for every pair of a sequence of max_position_embeddings
// tokens, with log buckets, few buckets and no buckets.
func TestBucketTable(t *testing.T) {
	for _, tc := range []struct{ positions, buckets, maxRel int }{
		{512, 256, -1}, {128, 8, 32}, {64, -1, 24}, {40, 16, 40},
	} {
		cfg := Default()
		cfg.MaxPositionEmbeddings, cfg.PositionBuckets, cfg.MaxRelativePositions = tc.positions, tc.buckets, tc.maxRel
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		m := tc.positions
		table := bucketTable(cfg)
		if len(table) != 2*m-1 {
			t.Fatalf("%+v: table of %d, want %d", tc, len(table), 2*m-1)
		}
		idx := relIndex(cfg, m)
		bad := 0
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				if got := table[i-j+m-1]; got != int64(idx[i*m+j]) {
					bad++
					if bad < 5 {
						t.Errorf("%+v: (%d, %d): table %d, Encode %d", tc, i, j, got, idx[i*m+j])
					}
				}
			}
		}
	}
}
