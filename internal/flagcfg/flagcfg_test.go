package flagcfg

import (
	"flag"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// level is a flag.Value of its own.
type level int

func (l *level) String() string { return levelName(int(*l)) }
func (l *level) Set(s string) error {
	switch s {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return errBadLevel
	}
	return nil
}

var errBadLevel = &levelError{}

type levelError struct{}

func (*levelError) Error() string { return "want low or high" }

func levelName(i int) string { return [...]string{"none", "low", "high"}[i] }

type mode string

type section struct {
	Rate  float64 `json:"rate" help:"learning rate"`
	Steps int     `json:"steps" help:"steps (0: auto)"`
}

type config struct {
	Name     string         `json:"name" help:"the name"`
	Verbose  bool           `json:"verbose" help:"say more"`
	Count    int            `json:"count" help:"how many"`
	Big      int64          `json:"big"`
	Seed     uint64         `json:"seed"`
	Wait     time.Duration  `json:"-" flag:"wait" help:"how long"`
	Tags     []string       `json:"tags" help:"comma list"`
	Mode     mode           `json:"mode"`
	Prompt   *string        `json:"prompt,omitempty" help:"nil: auto"`
	Addr     netip.Addr     `json:"addr"`
	Level    level          `json:"level"`
	Train    section        `json:"train"`
	Other    section        `flag:"-"`
	Renamed  string         `json:"renamed" flag:"first-stage"`
	Writer   io.Writer      `json:"-"`
	Meta     map[string]int `flag:"-"`
	MaxBatch int            // no tag: max-batch
	private  int
}

func defaults() config {
	return config{Name: "x", Count: 3, Seed: 1, Wait: time.Second, Tags: []string{"a", "b"}, Mode: "fast",
		Addr: netip.MustParseAddr("127.0.0.1"), Level: 1, Train: section{Rate: 0.5}, MaxBatch: 64}
}

func TestBind(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		args []string
		want func(*config)
	}{
		{"defaults", nil, func(*config) {}},
		{"string", []string{"-name", "y"}, func(c *config) { c.Name = "y" }},
		{"bool", []string{"-verbose"}, func(c *config) { c.Verbose = true }},
		{"int", []string{"-count", "-2"}, func(c *config) { c.Count = -2 }},
		{"int64", []string{"-big", "1099511627776"}, func(c *config) { c.Big = 1 << 40 }},
		{"uint64", []string{"-seed", "7"}, func(c *config) { c.Seed = 7 }},
		{"duration", []string{"-wait", "4m"}, func(c *config) { c.Wait = 4 * time.Minute }},
		{"list", []string{"-tags", " c, ,d "}, func(c *config) { c.Tags = []string{"c", "d"} }},
		{"empty list", []string{"-tags", ""}, func(c *config) { c.Tags = []string{} }},
		{"named string", []string{"-mode", "slow"}, func(c *config) { c.Mode = "slow" }},
		{"pointer given", []string{"-prompt", "q: "}, func(c *config) { c.Prompt = p("q: ") }},
		{"pointer given empty", []string{"-prompt", ""}, func(c *config) { c.Prompt = p("") }},
		{"text unmarshaler", []string{"-addr", "::1"}, func(c *config) { c.Addr = netip.MustParseAddr("::1") }},
		{"flag.Value", []string{"-level", "high"}, func(c *config) { c.Level = 2 }},
		{"section flattened", []string{"-rate", "0.1", "-steps", "9"}, func(c *config) { c.Train = section{Rate: 0.1, Steps: 9} }},
		{"flag tag renames", []string{"-first-stage", "run"}, func(c *config) { c.Renamed = "run" }},
		{"kebab name", []string{"-max-batch", "8"}, func(c *config) { c.MaxBatch = 8 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			if _, err := Bind(fs, &c); err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tc.want(&want)
			if !reflect.DeepEqual(c, want) {
				t.Errorf("%q: got %+v, want %+v", tc.args, c, want)
			}
		})
	}
}

func TestBindNames(t *testing.T) {
	c := defaults()
	fl, err := Fields(&c)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fl {
		names = append(names, f.Name)
	}
	want := "name verbose count big seed wait tags mode prompt addr level rate steps first-stage max-batch"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("flags %s, want %s", got, want)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	if _, err := Bind(fs, &c); err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string]string{"name": "x", "count": "3", "wait": "1s", "tags": "a,b", "mode": "fast", "prompt": "", "addr": "127.0.0.1", "level": "low", "rate": "0.5", "verbose": "false"} {
		if got := fs.Lookup(name).DefValue; got != def {
			t.Errorf("-%s default %q, want %q", name, got, def)
		}
	}
	if u := fs.Lookup("count").Usage; u != "how many" {
		t.Errorf("-count help %q", u)
	}
}

func TestBindErrors(t *testing.T) {
	type unsupported struct {
		F []int `json:"f"`
	}
	type dup struct {
		A section `json:"a"`
		B section
	}
	type dupNamed struct {
		A int `json:"x"`
		B int `flag:"x"`
	}
	type defined struct {
		Count int `json:"count"`
	}
	type badEnv struct {
		N int `json:"n" env:"FLAGCFG_TEST_N"`
	}
	t.Setenv("FLAGCFG_TEST_N", "many")
	for _, tc := range []struct {
		name string
		cfg  any
		want string
	}{
		{"not a pointer", config{}, "not a pointer to a struct"},
		{"nil", (*config)(nil), "not a pointer to a struct"},
		{"unsupported type", &unsupported{}, `F (-f): type []int has no flag`},
		{"two flags one name", &dupNamed{}, "A and B are both flag -x"},
		{"two sections one field name", &dup{}, "A.Rate and B.Rate are both flag -rate"},
		{"already defined", &defined{}, "flag -count is already defined"},
		{"bad environment", &badEnv{}, `$FLAGCFG_TEST_N (the default of -n) "many"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.Int("count", 0, "")
			_, err := Bind(fs, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Bind: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	type cfg struct {
		URL string `json:"url" env:"FLAGCFG_TEST_URL"`
		N   int    `json:"n" env:"FLAGCFG_TEST_UNSET"`
	}
	t.Setenv("FLAGCFG_TEST_URL", "postgres://h/db")
	t.Setenv("FLAGCFG_TEST_UNSET", "")
	c := cfg{N: 5}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	if _, err := Bind(fs, &c); err != nil {
		t.Fatal(err)
	}
	if c.URL != "postgres://h/db" || fs.Lookup("url").DefValue != "postgres://h/db" || c.N != 5 {
		t.Errorf("env defaults: %+v", c)
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{"MaxBatch": "max-batch", "K": "k", "MaxK": "max-k", "SyntheticLLMModel": "synthetic-llm-model", "ANN": "ann", "LR": "lr", "HTTPAddr": "http-addr"} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	type cfg struct {
		Addr  string        `json:"addr" help:"listen address"`
		K     int           `json:"k" help:"tools a query gets"`
		Off   bool          `json:"off" help:"a | pipe"`
		Wait  time.Duration "json:\"wait\" help:\"how long to wait for a `TIME`\""
		Quiet bool          `json:"quiet"`
	}
	c := cfg{Addr: "127.0.0.1:8080", K: 5}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	if _, err := Bind(fs, &c); err != nil {
		t.Fatal(err)
	}
	want := "| flag | default | meaning |\n|---|---|---|\n" +
		"| `-addr string` | `127.0.0.1:8080` | listen address |\n" +
		"| `-k int` | `5` | tools a query gets |\n" +
		"| `-off` |  | a \\| pipe |\n" +
		"| `-quiet` |  |  |\n" +
		"| `-wait TIME` |  | how long to wait for a TIME |\n"
	if got := Markdown(fs); got != want {
		t.Errorf("Markdown:\n%s\nwant\n%s", got, want)
	}
}

func TestReplaceSection(t *testing.T) {
	page := "# Page\n\n" + Section("x", "old\n") + "after\n"
	got, err := ReplaceSection([]byte(page), "x", "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Page\n\n" + Section("x", "new\n") + "after\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := ReplaceSection([]byte(page), "y", ""); err == nil || !strings.Contains(err.Error(), "no generated section") {
		t.Errorf("missing section: %v", err)
	}
}
