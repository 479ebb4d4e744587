package kinds

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type testConfig struct {
	Training struct {
		Epochs int `json:"epochs"`
	} `json:"training"`
}

func init() {
	Register(Kind{Name: "test-base", ConfigFile: "test-base.json"})
	Register(Kind{Name: "test-derived", ConfigFile: "test-derived.json", Base: "test-base",
		NewConfig: func() any { c := &testConfig{}; c.Training.Epochs = 4; return c },
		FromArgs: func(args map[string]string) (any, error) {
			c := &testConfig{}
			c.Training.Epochs = len(args["epochs"])
			return c, nil
		}})
	// A kind without FromArgs: its format-1 runs migrate through rundir.ConfigFromArgs.
	Register(Kind{Name: "test-plain", NewConfig: func() any { c := &testConfig{}; c.Training.Epochs = 4; return c }})
	// A second registration fills in another facet.
	Register(Kind{Name: "test-derived", Train: func(ctx context.Context, cfg any) (*Result, error) {
		return &Result{RunDir: "trained", Config: cfg}, nil
	}})
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOf(t *testing.T) {
	root := t.TempDir()
	base, both, meta, none := filepath.Join(root, "base"), filepath.Join(root, "both"), filepath.Join(root, "meta"), filepath.Join(root, "none")
	write(t, base, "test-base.json", "{}")
	write(t, both, "test-base.json", "{}")
	write(t, both, "test-derived.json", "{}")
	write(t, meta, "test-base.json", "{}")
	write(t, meta, "run.json", `{"format": 2, "kind": "test-derived"}`)
	write(t, none, "x.json", "{}")
	for _, tc := range []struct{ dir, want string }{
		{base, "test-base"},
		{both, "test-derived"}, // a kind is preferred to its base
		{meta, "test-derived"}, // run.json names the kind
	} {
		k, err := Of(tc.dir)
		if err != nil || k.Name != tc.want {
			t.Errorf("Of(%s) = %q, %v; want %s", filepath.Base(tc.dir), k.Name, err, tc.want)
		}
	}
	if _, err := Of(none); !errors.Is(err, ErrNotKind) || !strings.Contains(err.Error(), "test-base.json") {
		t.Errorf("Of(a directory of no kind): %v", err)
	}
}

func TestRegisterMergesAndRefusesTwice(t *testing.T) {
	k, err := Lookup("test-derived")
	if err != nil || k.Train == nil || k.NewConfig == nil || k.ConfigFile != "test-derived.json" {
		t.Fatalf("merged kind %+v, %v", k, err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Train registered twice") {
			t.Errorf("second Train: %v", r)
		}
	}()
	Register(Kind{Name: "test-derived", Train: k.Train})
}

func TestTrainAndConfig(t *testing.T) {
	if _, err := Train(context.Background(), "test-base", nil); err == nil || !strings.Contains(err.Error(), "train it with `toolret train test-base`") {
		t.Errorf("a kind without a recipe: %v", err)
	}
	if _, err := Train(context.Background(), "nope", nil); err == nil || !strings.Contains(err.Error(), `unknown model kind "nope"`) {
		t.Errorf("an unknown kind: %v", err)
	}
	if r, err := Train(context.Background(), "test-derived", 7); err != nil || r.RunDir != "trained" || r.Config != 7 {
		t.Errorf("Train = %+v, %v", r, err)
	}
	dir := t.TempDir()
	write(t, dir, "run.json", `{"format": 1, "kind": "test-derived", "args": {"epochs": "abc"}}`)
	c, err := Config(dir)
	if err != nil || c.(*testConfig).Training.Epochs != 3 {
		t.Errorf("format-1 config: %+v, %v", c, err)
	}
	write(t, dir, "run.json", `{"format": 2, "kind": "test-derived", "config": {"training": {"epochs": 9}}}`)
	if c, err = Config(dir); err != nil || c.(*testConfig).Training.Epochs != 9 {
		t.Errorf("format-2 config: %+v, %v", c, err)
	}
	write(t, dir, "run.json", `{"format": 2, "kind": "test-base"}`)
	if _, err = Config(dir); err == nil || !strings.Contains(err.Error(), "no typed configuration") {
		t.Errorf("a kind without a typed configuration: %v", err)
	}
}

func TestResume(t *testing.T) {
	dir := t.TempDir()
	given := func(epochs int) *testConfig { c := &testConfig{}; c.Training.Epochs = epochs; return c }
	for _, tc := range []struct {
		name, runJSON string
		given         *testConfig
		want          string // "": resumes
	}{
		{"typed, same", `{"format": 2, "kind": "test-plain", "config": {"training": {"epochs": 9}}}`, given(9), ""},
		{"typed, changed", `{"format": 2, "kind": "test-plain", "config": {"training": {"epochs": 9}}}`, given(2),
			"refused, the configuration differs from the run's: epochs 2 != recorded 9"},
		{"args only, same", `{"format": 1, "kind": "test-plain", "args": {"epochs": "7", "run": "x"}}`, given(7), ""},
		{"args only, changed", `{"format": 1, "kind": "test-plain", "args": {"epochs": "7"}}`, given(4), "epochs 4 != recorded 7"},
		{"args only, default", `{"format": 1, "kind": "test-plain", "args": {}}`, given(4), ""},
		{"bad args", `{"format": 1, "kind": "test-plain", "args": {"epochs": "x"}}`, given(4), `recorded -epochs "x"`},
		{"another kind", `{"format": 2, "kind": "test-derived"}`, given(4), "a test-derived run, not a plain test run"},
	} {
		write(t, dir, "run.json", tc.runJSON)
		err := Resume(dir, "test-plain", "plain test", tc.given)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := Resume(filepath.Join(dir, "none"), "test-plain", "plain test", given(4)); err == nil {
		t.Error("no run: no error")
	}
}

func TestRegisterFacetsOnce(t *testing.T) {
	Register(Kind{Name: "test-facets", Help: "a test kind"})
	Register(Kind{Name: "test-facets", Command: func([]string) error { return nil },
		Export: &Export{Formats: []string{"hf", "index"}, FirstStage: "biencoder"}})
	k, err := Lookup("test-facets")
	if err != nil || k.Help != "a test kind" || k.Command == nil || !k.Exports("index") || k.Exports("onnx") {
		t.Fatalf("merged kind %+v, %v", k, err)
	}
	if (Kind{}).Exports("hf") {
		t.Error("a kind without an export facet exports")
	}
	for _, tc := range []struct {
		field string
		k     Kind
	}{
		{"Help", Kind{Help: "again"}},
		{"Command", Kind{Command: k.Command}},
		{"Export", Kind{Export: &Export{}}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), tc.field+" registered twice") {
					t.Errorf("second %s: %v", tc.field, r)
				}
			}()
			tc.k.Name = "test-facets"
			Register(tc.k)
		})
	}
	var names []string
	for _, k := range All() {
		names = append(names, k.Name)
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "test-facets") {
		t.Errorf("All() = %v, want every kind sorted by name", names)
	}
}
