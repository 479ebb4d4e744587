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
	if o.cfg.RerankWeight != -1 || o.cfg.NoRefiner {
		t.Fatalf("defaults: rerank weight %g, no-refiner %v", o.cfg.RerankWeight, o.cfg.NoRefiner)
	}
	if o.cfg.Addr != "127.0.0.1:8080" || o.cfg.K != 3 || o.cfg.MaxK != 100 || o.cfg.MaxBatch != 64 || o.cfg.MaxBody != 1<<20 || o.cfg.Model != "my-index" || o.cfg.MCP != "" {
		t.Fatalf("defaults: %+v", o)
	}
	if o.cfg.Warmup != 1 || o.cfg.MaxInFlight != 512 || o.cfg.MaxConns != 4096 || o.cfg.HeaderTimeout != 5*time.Second || o.cfg.DrainDelay != 0 {
		t.Fatalf("defaults of the start, drain and limits: %+v", o)
	}
	o, err = parse([]string{"-library", "lib.jsonl", "-model", "org/model", "-upstreams", "up.json", "-keys", "", "-rate", "5"})
	if err != nil || o.cfg.Library != "lib.jsonl" || o.cfg.Model != "org/model" || o.cfg.Upstreams != "up.json" || o.cfg.Rate != 5 || o.cfg.Index != "" {
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
		{[]string{"-index", "x", "-precision", "fp16"}, `-precision "fp16": want fp32, bf16, auto`},
	} {
		if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want %q", tc.args, err, tc.want)
		}
	}
}
