package rundir

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
)

// TestHoldoutSplit checks that a split carved on a held-out-tool view records the view, is
// rebuilt on the same view, and is refused on the dataset's own splits or another view.
func TestHoldoutSplit(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.HoldoutTools(0.2, 2)
	if err != nil {
		t.Fatal(err)
	}
	sp, train, dev, err := Carve(v, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Holdout == nil || *sp.Holdout != (data.Holdout{Fraction: 0.2, Seed: 1}) {
		t.Fatalf("Carve on a view records holdout %+v", sp.Holdout)
	}
	_, wantDev, _ := v.CarveDevTools("train", 0.1, 1)
	if !slices.Equal(dev.Queries, wantDev.Queries) {
		t.Fatal("Carve on a view does not carve by tools")
	}
	dir := t.TempDir()
	if err := Create(dir, &Meta{Kind: "biencoder", Dataset: v.Name, Fingerprint: v.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	gotTrain, gotDev, m, err := Splits(dir, v)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotDev.Queries, dev.Queries) || !slices.Equal(gotTrain.Queries, train.Queries) || *m.Split.Holdout != *sp.Holdout {
		t.Error("the recorded split does not rebuild on the same view")
	}
	for _, tc := range []struct {
		name string
		d    *data.Dataset
		want string
	}{
		{"standard", d, "this data (toolret-default) is the dataset's own splits: give -holdout-tools 0.2 -holdout-seed 1"},
		{"other seed", other, "is the held-out-tool view -holdout-tools 0.2 -holdout-seed 2: give -holdout-tools 0.2 -holdout-seed 1"},
	} {
		if _, _, _, err := Splits(dir, tc.d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Splits err %v, want %q", tc.name, err, tc.want)
		}
		if err := m.CheckView(tc.d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckView err %v, want %q", tc.name, err, tc.want)
		}
		if _, _, err := sp.Apply(tc.d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Apply err %v, want %q", tc.name, err, tc.want)
		}
	}
	// A run of the dataset's own splits is refused on a view.
	std, _, _, err := Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if std.Holdout != nil {
		t.Fatal("Carve on the dataset's own splits records a holdout")
	}
	ms := &Meta{Kind: "biencoder", Dataset: d.Name, Split: std}
	if err := ms.CheckView(v); err == nil || !strings.Contains(err.Error(), "held-out-tool view -holdout-tools 0.2 -holdout-seed 1: omit -holdout-tools") {
		t.Errorf("standard run on a view: %v", err)
	}
	if err := ms.CheckView(d); err != nil {
		t.Errorf("standard run on its data: %v", err)
	}
}
