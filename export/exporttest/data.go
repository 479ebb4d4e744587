package exporttest

import (
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rundir"
)

// SmallData returns the embedded default dataset cut to the first nTrain judged train and
// nTest judged test queries (every tool, no scenes), written to dir in BEIR layout and loaded
// back: a dataset on which tiny training runs take seconds.
func SmallData(dir string, nTrain, nTest int) (*data.Dataset, error) {
	d, err := data.Default()
	if err != nil {
		return nil, err
	}
	sub := *d
	sub.Splits, sub.Scenes, sub.SceneIDs = map[string]*data.Split{}, nil, nil
	for name, n := range map[string]int{"train": nTrain, "test": nTest} {
		src := d.Splits[name]
		dst := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range src.Judged()[:n] {
			dst.Queries = append(dst.Queries, q)
			dst.Relevant[q] = src.Relevant[q]
		}
		sub.Splits[name] = dst
	}
	if err := data.WriteBEIR(&sub, dir); err != nil {
		return nil, err
	}
	return data.Load(dir)
}

// WriteRecordedRunOn is WriteRun plus the run.json train biencoder records on d: kind
// biencoder, d's fingerprint and a dev split carved from d's train split (dev, devSeed).
func WriteRecordedRunOn(runDir string, d *data.Dataset, dev float64, devSeed int64, o Options, be compute.Backend, seed uint64) error {
	if err := WriteRun(runDir, o, be, seed); err != nil {
		return err
	}
	sp, _, _, err := rundir.Carve(d, "train", dev, devSeed)
	if err != nil {
		return err
	}
	return rundir.Create(runDir, &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp})
}

// SmallStage1 writes SmallData(dir/data, 60, 20) and over it a tiny recorded bi-encoder run,
// dir/be (dev fraction 0.2, dev seed 7), on the go backend: the stage 1 that the training
// tests of the later kinds (cross-encoder, refiner) build on. It returns the dataset and the
// run directory.
func SmallStage1(dir string) (*data.Dataset, string, error) {
	d, err := SmallData(filepath.Join(dir, "data"), 60, 20)
	if err != nil {
		return nil, "", err
	}
	bk, err := backend.Open("go")
	if err != nil {
		return nil, "", err
	}
	be := filepath.Join(dir, "be")
	if err := WriteRecordedRunOn(be, d, 0.2, 7, Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 3); err != nil {
		return nil, "", err
	}
	return d, be, nil
}
