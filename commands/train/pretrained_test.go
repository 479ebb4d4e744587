package traincmd

import (
	"flag"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/encoder"
)

// TestResolveInit checks that -init resolves a hub id to its cached snapshot and that the
// unset -pooling and -lr follow a pre-trained model (its Pooling module, 2e-5), while given
// flags win.
func TestResolveInit(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hf, cache, snap, err := exporttest.HubModel(dir, "toolret-test/tiny-cls", exporttest.Options{Pooling: encoder.PoolCLS}, be, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	for _, c := range []struct {
		name, init string
		args       []string
		dir, pool  string
		lr         float64
		wantErr    bool
	}{
		{"hub id", "toolret-test/tiny-cls", nil, snap, "cls", pretrainedLR, false},
		{"directory", hf, nil, hf, "cls", pretrainedLR, false},
		{"flags given", hf, []string{"-pooling", "mean", "-lr", "1e-4"}, hf, "mean", 1e-4, false},
		{"not cached", "toolret-test/absent", nil, "", "", 0, true},
		{"none", "", nil, "", "mean", 5e-4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("train t", flag.ContinueOnError)
			pooling := fs.String("pooling", "mean", "")
			lr := fs.Float64("lr", 5e-4, "")
			if err := cli.Parse(fs, c.args); err != nil {
				t.Fatal(err)
			}
			init := c.init
			err := resolveInit(fs, &init, pooling, lr)
			if c.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if init != c.dir || *pooling != c.pool || *lr != c.lr {
				t.Errorf("init %q pooling %s lr %g, want %q %s %g", init, *pooling, *lr, c.dir, c.pool, c.lr)
			}
		})
	}
}
