package kinds

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/metrics"
)

// Typed adapts a kind's typed recipe to Kind.NewConfig and Kind.Train: NewConfig returns a
// pointer to defaults(); Train accepts a C or a *C, calls train and maps its result with
// result (the configuration recorded in Result.Config is the one given).
func Typed[C, R any](name string, defaults func() C, train func(context.Context, C) (R, error), result func(R) *Result) (newConfig func() any, trainAny func(context.Context, any) (*Result, error)) {
	newConfig = func() any { c := defaults(); return &c }
	trainAny = func(ctx context.Context, cfg any) (*Result, error) {
		var c C
		switch v := cfg.(type) {
		case C:
			c = v
		case *C:
			if v == nil {
				return nil, fmt.Errorf("train %s: nil configuration", name)
			}
			c = *v
		default:
			return nil, fmt.Errorf("train %s: configuration %T, want %T", name, cfg, c)
		}
		r, err := train(ctx, c)
		if err != nil {
			return nil, err
		}
		out := result(r)
		if out.Config == nil {
			out.Config = &c
		}
		return out, nil
	}
	return newConfig, trainAny
}

// TestReport returns a recipe's one test report as Result.Test ({"test": r}); nil for none.
func TestReport(r *metrics.Report) map[string]metrics.Report {
	if r == nil {
		return nil
	}
	return map[string]metrics.Report{"test": *r}
}
