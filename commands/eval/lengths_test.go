package evalcmd

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
)

// TestLengths: -query-len and -tool-len reach every dense model eval ranks with (-run,
// -model, and -runs' run: and model: entries): a run's training length changes nothing, a
// shorter tool length changes the metrics, and run:RUN fused alone ranks as -run RUN with
// them; lengths out of range, or with -index, are refused.
func TestLengths(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 5); err != nil {
		t.Fatal(err)
	}
	hf, cache, _, err := exporttest.HubModel(dir, "toolret-test/tiny", exporttest.Options{}, be, 11)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	with := func(kv map[string]string, more ...string) map[string]string {
		out := map[string]string{"backend": "go"}
		for k, v := range kv {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	for _, src := range []map[string]string{{"run": run}, {"model": hf}} {
		base := runJSON(t, with(src))
		if r, _ := base["recall@10"].(float64); r <= 0 {
			t.Fatalf("%v: recall@10 = %v: the comparison is vacuous", src, base["recall@10"])
		}
		if src["run"] != "" {
			if same := runJSON(t, with(src, "query-len", "32", "tool-len", "64")); !reflect.DeepEqual(same, base) {
				t.Errorf("-run with its training lengths (32, 64) %v\nwithout %v", same, base)
			}
		}
		short := runJSON(t, with(src, "tool-len", "4"))
		if reflect.DeepEqual(short, base) {
			t.Errorf("%v -tool-len 4 changed nothing", src)
		}
		entry := "run:" + src["run"]
		if src["model"] != "" {
			entry = "model:toolret-test/tiny"
		}
		if fused := runJSON(t, with(map[string]string{"method": "fusion", "runs": entry + ",bm25", "weight": "1", "tool-len": "4"})); !reflect.DeepEqual(fused, short) {
			t.Errorf("-runs %s,bm25 -weight 1 -tool-len 4 %v\nalone %v", entry, fused, short)
		}
	}
	index := filepath.Join(dir, "index") // refused before it is read
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"run": run, "tool-len": "1"}, "length 1"},
		{map[string]string{"run": run, "query-len": "-3"}, "length -3"},
		{map[string]string{"run": run, "tool-len": "129"}, "length 129"},
		{map[string]string{"model": hf, "tool-len": "1"}, "tool 1"},
		{map[string]string{"index": index, "tool-len": "128"}, "not to -index"},
	} {
		if err := runErr(with(c.kv)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to mention %q", c.kv, err, c.want)
		}
	}
}
