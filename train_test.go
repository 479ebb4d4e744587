package toolret_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/kinds"
)

// Every registered model kind trains from its typed configuration through toolret.Train.
func TestEveryKindTrains(t *testing.T) {
	names := kinds.Names()
	for _, want := range []string{"biencoder", "crossencoder", "classifier", "refiner", "colt", "pretrain"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Errorf("kind %s is not registered (kinds: %v)", want, names)
		}
	}
	for _, n := range names {
		cfg, err := toolret.NewConfig(n)
		if err != nil || cfg == nil {
			t.Errorf("NewConfig(%s): %v, %v", n, cfg, err)
			continue
		}
		if _, err := toolret.Train(context.Background(), n, struct{}{}); err == nil || !strings.Contains(err.Error(), "want ") {
			t.Errorf("Train(%s, struct{}{}): %v, want an error naming the configuration type", n, err)
		}
	}
}
