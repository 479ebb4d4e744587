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
