package cli

import (
	"flag"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/datatest"
)

// TestLoadSourcesList: a list of sources opens as a multi-source dataset for the kinds that
// train on several libraries (LoadSources: train crossencoder), and is refused, naming the
// kinds that take one, by the others (LoadData).
func TestLoadSourcesList(t *testing.T) {
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	for _, c := range []struct {
		name    string
		load    func(*flag.FlagSet) (*data.Dataset, error)
		spec    string
		libs    int
		wantErr string
	}{
		{"LoadSources, a list", LoadSources, "lens:1,mix:3", 3, ""},
		{"LoadSources, a list of one", LoadSources, "lens:1", 1, ""},
		{"LoadData, a list", LoadData, "lens:1,mix:3", 0, "train biencoder and train crossencoder"},
		{"LoadSources, a bad weight", LoadSources, "lens:0,mix", 0, "lens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.String("data", c.spec, "")
			d, err := c.load(fs)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Libraries) != c.libs {
				t.Errorf("%d libraries, want %d", len(d.Libraries), c.libs)
			}
		})
	}
}
