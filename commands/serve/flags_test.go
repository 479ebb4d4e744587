package servecmd

import (
	"flag"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/internal/flagcfg"
)

var update = flag.Bool("update", false, "rewrite the generated flag reference of docs/command-line-vocabulary.md")

// cleanEnv empties the environment variables that serve's defaults read.
func cleanEnv(t *testing.T) {
	t.Setenv("TOOLRET_DATABASE_URL", "")
	t.Setenv("TOOLRET_KEYS", "")
}

// TestServeFlagDefaults compares serve's flags with DefaultServeConfig: every flag a field
// declares has the field's default value, the flags not declared by a field are the
// command's own (-keys, the shared -ensemble flags), and no flag of serve went missing.
func TestServeFlagDefaults(t *testing.T) {
	cleanEnv(t)
	fs, _, _, err := serveFlags()
	if err != nil {
		t.Fatal(err)
	}
	def := toolret.DefaultServeConfig()
	fields, err := flagcfg.Fields(&def)
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]bool{}
	for _, f := range fields {
		config[f.Name] = true
		fl := fs.Lookup(f.Name)
		if fl == nil {
			t.Errorf("ServeConfig.%s: no flag -%s", f.Path, f.Name)
			continue
		}
		want := fmt.Sprint(f.Value())
		if v := reflect.ValueOf(f.Value()); v.Kind() == reflect.Pointer && v.IsNil() {
			want = "" // a pointer field: nil is "not given"
		}
		if fl.DefValue != want {
			t.Errorf("-%s default %q, DefaultServeConfig.%s %q", f.Name, fl.DefValue, f.Path, want)
		}
		if f.Help == "" {
			t.Errorf("ServeConfig.%s (-%s) has no help tag", f.Path, f.Name)
		}
	}
	own := map[string]bool{"keys": true, "ensemble": true, "ensemble-fusion": true, "ensemble-weights": true}
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		names = append(names, f.Name)
		if !config[f.Name] && !own[f.Name] {
			t.Errorf("-%s is declared by hand, not by a ServeConfig field", f.Name)
		}
	})
	want := []string{"addr", "ann", "backend", "burst", "clauses", "compact-every", "database", "database-log-keep", "depth", "drain-delay",
		"embed-batch", "embed-tokens", "embed-wait", "ensemble", "ensemble-fusion", "ensemble-weights", "grace", "header-timeout",
		"hybrid", "hybrid-weight", "index", "index-backend", "k", "keys", "library", "max-batch", "max-body", "max-conns",
		"max-inflight", "max-k", "mcp", "model", "no-recipe", "no-refiner", "precision", "query-cache", "quantize", "rate", "reranker",
		"rerank-weight", "state", "timeout", "upstreams", "warmup"}
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("serve's flags:\n%q\nwant\n%q", names, want)
	}
}

// TestFlagReference checks the generated flag reference of serve in
// docs/command-line-vocabulary.md; -update rewrites it.
func TestFlagReference(t *testing.T) {
	cleanEnv(t)
	fs, _, _, err := serveFlags()
	if err != nil {
		t.Fatal(err)
	}
	if err := flagcfg.CheckDoc("../../docs/command-line-vocabulary.md", "serve", fs, *update); err != nil {
		t.Error(err)
	}
}
