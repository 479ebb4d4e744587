package check

import (
	"errors"
	"fmt"
	"testing"
)

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"positive int", Positive("batch", 0), "batch 0: must be > 0"},
		{"positive float", Positive("lr", -1e-3), "lr -0.001: must be > 0"},
		{"positive ok", Positive("batch", 1), ""},
		{"non-negative", NonNegative("clip", -1.5), "clip -1.5: must be >= 0"},
		{"non-negative zero", NonNegative("clip", 0), ""},
		{"fraction", Fraction("dev", 1.5), "dev 1.5: must be in (0, 1)"},
		{"fraction zero", Fraction("dev", 0), "dev 0: must be in (0, 1)"},
		{"fraction ok", Fraction("dev", 0.1), ""},
		{"quoted", Quoted("metric", "ndcg@20", "want one of ndcg@5"), `metric "ndcg@20": want one of ndcg@5`},
		{"no value", &Error{Name: "run", Reason: "required"}, "run: required"},
		{"first", First(nil, Positive("epochs", 0), Positive("batch", 0)), "epochs 0: must be > 0"},
		{"first none", First(nil, nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if tc.err != nil {
				got = tc.err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFlag(t *testing.T) {
	plain := errors.New("plain")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"setting", Positive("batch", 0), "-batch 0: must be > 0"},
		{"wrapped", fmt.Errorf("run r: %w", Positive("epochs", -1)), "run r: -epochs -1: must be > 0"},
		{"already a flag", fmt.Errorf("-%w", Positive("k", 0)), "-k 0: must be > 0"},
		{"other error", plain, "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Flag(tc.err)
			if got.Error() != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("errors.Is(Flag(err), err) is false")
			}
		})
	}
	if Flag(nil) != nil {
		t.Error("Flag(nil) is not nil")
	}
}
