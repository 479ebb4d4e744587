package rundir

import (
	"reflect"
	"strings"
	"testing"
)

type testSection struct {
	Name  string  `json:"name"`
	N     int     `json:"n"`
	Seed  uint64  `json:"seed"`
	LR    float64 `json:"lr"`
	Flag  bool    `json:"flag"`
	Skip  string  `json:"-"`
	inner int
}

type testConfig struct {
	A   testSection `json:"a"`
	Top string      `json:"top"`
	Run string      `json:"-"`
}

func TestConfigArgsRoundTrip(t *testing.T) {
	c := testConfig{A: testSection{Name: "x", N: -3, Seed: 1 << 40, LR: 1e-5, Flag: true, Skip: "no"}, Top: "t", Run: "r"}
	args := ConfigArgs(c)
	want := map[string]string{"name": "x", "n": "-3", "seed": "1099511627776", "lr": "1e-05", "flag": "true", "top": "t"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("ConfigArgs = %v, want %v", args, want)
	}
	var back testConfig
	if err := ConfigFromArgs(&back, args); err != nil {
		t.Fatal(err)
	}
	c.A.Skip, c.Run = "", ""
	if !reflect.DeepEqual(back, c) {
		t.Errorf("ConfigFromArgs = %+v, want %+v", back, c)
	}
}

func TestConfigFromArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"n": "x"}, `recorded -n "x"`},
		{map[string]string{"seed": "-1"}, `recorded -seed "-1"`},
		{map[string]string{"flag": "maybe"}, `recorded -flag "maybe"`},
		{map[string]string{"lr": "fast"}, `recorded -lr "fast"`},
	} {
		var c testConfig
		if err := ConfigFromArgs(&c, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := ConfigFromArgs(testConfig{}, nil); err == nil {
		t.Error("a struct value, not a pointer: no error")
	}
	var c testConfig
	if err := ConfigFromArgs(&c, map[string]string{"run": "x", "unknown": "y"}); err != nil || c != (testConfig{}) {
		t.Errorf("flags naming no field: %+v, %v", c, err)
	}
}

func TestConfigDiff(t *testing.T) {
	rec := testConfig{A: testSection{Name: "a", N: 1, LR: 0.5}, Top: "t"}
	given := rec
	given.A.Name, given.A.N, given.Run = "b", 2, "other"
	got := ConfigDiff(rec, given, "n")
	if want := []string{`name "b" != recorded "a"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("ConfigDiff = %q, want %q", got, want)
	}
	if ConfigDiffError("d", nil) != nil {
		t.Error("no differences: an error")
	}
	if got := ConfigDiff(rec, testSection{}); len(got) != 1 {
		t.Errorf("configurations of two types: %q", got)
	}
}

// flagged names its leaves by their flag tags where they differ from the json names.
type flagged struct {
	ListLen int    `json:"list_len" flag:"list-len"`
	Views   string `json:"views"`
	Hidden  int    `json:"hidden" flag:"-"` // no flag: named by its json name
}

func TestConfigFlagNames(t *testing.T) {
	c := flagged{ListLen: 4, Views: "both", Hidden: 3}
	if got, want := ConfigArgs(c), map[string]string{"list-len": "4", "views": "both", "hidden": "3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ConfigArgs = %v, want %v", got, want)
	}
	g := c
	g.ListLen = 5
	if got, want := ConfigDiff(c, g), []string{"list-len 5 != recorded 4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ConfigDiff = %q, want %q", got, want)
	}
	// A format-1 run's flags: the renamed flag under its json name (its old spelling), or its own.
	for _, args := range []map[string]string{{"list_len": "6"}, {"list-len": "6", "list_len": "7"}} {
		var back flagged
		if err := ConfigFromArgs(&back, args); err != nil || back.ListLen != 6 {
			t.Errorf("ConfigFromArgs(%v) = %+v, %v; want list-len 6", args, back, err)
		}
	}
}

func TestCopyConfig(t *testing.T) {
	rec := testConfig{A: testSection{Name: "a", N: 1, Seed: 9, LR: 0.5, Flag: true, Skip: "rec"}, Top: "t", Run: "rec"}
	dst := testConfig{A: testSection{Name: "given", N: 2, Skip: "mine"}, Run: "mine"}
	if err := CopyConfig(&dst, rec, func(n string) bool { return n == "name" }); err != nil {
		t.Fatal(err)
	}
	want := testConfig{A: testSection{Name: "given", N: 1, Seed: 9, LR: 0.5, Flag: true, Skip: "mine"}, Top: "t", Run: "mine"}
	if dst != want {
		t.Errorf("CopyConfig = %+v, want %+v", dst, want)
	}
	for _, tc := range []struct {
		dst, src any
	}{{dst, rec}, {&dst, testSection{}}, {&dst, 3}} {
		if err := CopyConfig(tc.dst, tc.src, func(string) bool { return false }); err == nil {
			t.Errorf("CopyConfig(%T, %T): no error", tc.dst, tc.src)
		}
	}
}

func TestRecord(t *testing.T) {
	c := testConfig{A: testSection{Name: "x", N: 3, LR: 0.25}, Top: "t", Run: "r"}
	for _, tc := range []struct {
		name string
		args map[string]string
		want map[string]string
	}{
		{"a Go caller", nil, ConfigArgs(c)},
		{"a command", map[string]string{"data": "d", "n": "stale", "run": "r"},
			map[string]string{"data": "d", "run": "r", "name": "x", "n": "3", "seed": "0", "lr": "0.25", "flag": "false", "top": "t"}},
	} {
		var m Meta
		if err := m.Record(&c, tc.args); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Args, tc.want) {
			t.Errorf("%s: args %v, want %v", tc.name, m.Args, tc.want)
		}
		var back testConfig
		if typed, err := m.DecodeConfig(&back, nil); err != nil || !typed {
			t.Fatalf("%s: DecodeConfig: %v, %v", tc.name, typed, err)
		}
		if want := (testConfig{A: testSection{Name: "x", N: 3, LR: 0.25}, Top: "t"}); back != want {
			t.Errorf("%s: recorded config %+v, want %+v", tc.name, back, want)
		}
	}
	args := map[string]string{"k": "v"}
	var m Meta
	if err := m.Record(&c, args); err != nil {
		t.Fatal(err)
	}
	if len(args) != 1 {
		t.Errorf("Record changed the caller's args: %v", args)
	}
}
