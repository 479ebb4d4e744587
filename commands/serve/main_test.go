package servecmd

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	o, err := parse([]string{"-index", "/data/my-index", "-k", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.rerankWeight != -1 || o.noRefiner {
		t.Fatalf("defaults: rerank weight %g, no-refiner %v", o.rerankWeight, o.noRefiner)
	}
	if o.addr != "127.0.0.1:8080" || o.k != 3 || o.maxK != 100 || o.maxBatch != 64 || o.maxBody != 1<<20 || o.model != "my-index" || o.mcp != "" {
		t.Fatalf("defaults: %+v", o)
	}
	if o.warmup != 1 || o.maxInFlight != 512 || o.maxConns != 4096 || o.headerTimeout != 5*time.Second || o.drainDelay != 0 {
		t.Fatalf("defaults of the start, drain and limits: %+v", o)
	}
	o, err = parse([]string{"-library", "lib.jsonl", "-model", "org/model", "-upstreams", "up.json", "-keys", "", "-rate", "5"})
	if err != nil || o.library != "lib.jsonl" || o.model != "org/model" || o.upstreams != "up.json" || o.rate != 5 || o.index != "" {
		t.Fatalf("-library: %+v %v", o, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-index is required"},
		{[]string{"-index", "x", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-index", "x", "-mcp", "sse"}, `-mcp "sse": want stdio or http`},
		{[]string{"-index", "x", "-k", "0"}, "-k 0: must be > 0"},
		{[]string{"-index", "x", "-k", "200"}, "-k 200 is above -max-k 100"},
		{[]string{"-index", "x", "-max-batch", "-1"}, "-max-batch -1: must be > 0"},
		{[]string{"-index", "x", "-max-body", "0"}, "-max-body 0: must be > 0"},
		{[]string{"-index", "x", "-timeout", "0s"}, "-timeout 0: must be > 0"},
		{[]string{"-index", "x", "-compact-every", "-5"}, "-compact-every -5: must be >= 0"},
		{[]string{"-index", "x", "-database-log-keep", "-1"}, "-database-log-keep -1: must be >= 0"},
		{[]string{"-index", "x", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-index", "x", "-rerank-weight", "0.5"}, "-rerank-weight needs -reranker"},
		{[]string{"-index", "x", "-reranker", "ce", "-rerank-weight", "1.5"}, "-rerank-weight 1.5: want a weight in [0, 1]"},
		{[]string{"-index", "x", "-reranker", "ce", "-rerank-weight", "-0.5"}, "-rerank-weight -0.5: want a weight in [0, 1]"},
		{[]string{"-library", "lib.jsonl"}, "-library needs -model"},
		{[]string{"-index", "x", "-upstreams", "up.json"}, "-upstreams and -state apply to -library"},
		{[]string{"-library", "lib.jsonl", "-model", "m", "-rate", "-1"}, "-rate -1: must be >= 0"},
		{[]string{"-index", "x", "-max-inflight", "-1"}, "-max-inflight -1: must be >= 0"},
		{[]string{"-index", "x", "-max-conns", "-1"}, "-max-conns -1: must be >= 0"},
		{[]string{"-index", "x", "-header-timeout", "0s"}, "-header-timeout 0: must be > 0"},
		{[]string{"-index", "x", "-warmup", "-1"}, "-warmup -1: must be >= 0"},
		{[]string{"-index", "x", "-drain-delay", "-1s"}, "-drain-delay -1: must be >= 0"},
	} {
		if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want %q", tc.args, err, tc.want)
		}
	}
}
