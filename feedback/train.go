package feedback

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// TrainRecordFile is the record, in a bi-encoder run trained on a collection (train
// biencoder -feedback), of the collection it was trained on (TrainRecord), so that a resumed
// run refuses a file that changed.
const TrainRecordFile = "feedback.json"

// TrainRecord is TrainRecordFile.
type TrainRecord struct {
	File       string `json:"file"`
	SHA256     string `json:"sha256"`
	Retriever  string `json:"retriever"`
	Iterations int    `json:"iterations"`
}

// Collection is a feedback collection (Run's output) read for iteration-aware training.
type Collection struct {
	Header Header
	Loops  []Loop
	// SHA256 is the hex digest of the collection file.
	SHA256 string
	// Retriever is the run whose recorded dev split the training takes: the one given to
	// ReadCollection, else the collection's.
	Retriever string
}

// ReadCollection reads the collection at path for data d, checking it was collected on d;
// retriever, when not empty, names the collection's retriever run (when it moved). Errors
// name the flag -feedback.
func ReadCollection(path, retriever string, d *data.Dataset) (*Collection, error) {
	h, loops, err := Read(path)
	if err != nil {
		return nil, fmt.Errorf("-feedback: %w", err)
	}
	if fp := d.Fingerprint(); h.Fingerprint != fp {
		return nil, fmt.Errorf("-feedback %s: collected on other data (dataset %s, fingerprint %.12s; this data: %s, %.12s)", path, h.Dataset, h.Fingerprint, d.Name, fp)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-feedback: %w", err)
	}
	defer f.Close()
	hash := sha256.New()
	if _, err := io.Copy(hash, f); err != nil {
		return nil, fmt.Errorf("-feedback: %w", err)
	}
	c := &Collection{Header: h, Loops: loops, SHA256: hex.EncodeToString(hash.Sum(nil)), Retriever: retriever}
	if c.Retriever == "" {
		c.Retriever = h.Settings["retriever"]
		if c.Retriever == "" {
			return nil, fmt.Errorf("-feedback %s: the record names no retriever: give -first-stage RUN (the run whose dev split the training takes)", path)
		}
	}
	return c, nil
}

// Iterations resolves the last iteration T trained (-iterations t) against the collection:
// t = 0 is all of its iterations; more than it has is an error.
func (c *Collection) Iterations(t int) (int, error) {
	if t == 0 {
		return c.Header.Iterations, nil
	}
	if t > c.Header.Iterations {
		return 0, fmt.Errorf("-iterations %d: the collection has %d", t, c.Header.Iterations)
	}
	return t, nil
}

// TrainingLoops returns the recorded loops of the judged queries of train (queries of the
// collection's split from, the split train was carved from) up to iteration T, as
// biencoder.FeedbackTask takes them: a loop must be finished or reach iteration T.
func (c *Collection) TrainingLoops(d *data.Dataset, train *data.Split, from string, T int) (map[int]biencoder.FeedbackLoop, error) {
	want := map[int]bool{}
	for _, q := range train.Judged() {
		want[q] = true
	}
	out := map[int]biencoder.FeedbackLoop{}
	for _, lp := range c.Loops {
		if lp.Split != from {
			continue
		}
		q, ok := d.QueryIndex[lp.QueryID]
		if !ok {
			return nil, fmt.Errorf("-feedback: query %q is not in dataset %s", lp.QueryID, d.Name)
		}
		if !want[q] {
			continue // a dev query of the retriever
		}
		if !lp.Done() && len(lp.Lines) <= T {
			return nil, fmt.Errorf("-feedback: query %q: the collection stopped at iteration %d of %d (resume train feedback to finish it)", lp.QueryID, len(lp.Lines)-1, T)
		}
		var fl biencoder.FeedbackLoop
		for _, l := range lp.Lines[:min(len(lp.Lines), T+1)] {
			fl.Instructions = append(fl.Instructions, l.Query)
			ids := make([]int, len(l.Retrieved))
			for i, id := range l.Retrieved {
				t, ok := d.ToolIndex[id]
				if !ok {
					return nil, fmt.Errorf("-feedback: query %q iteration %d: unknown tool id %q", lp.QueryID, l.Iteration, id)
				}
				ids[i] = t
			}
			fl.Retrieved = append(fl.Retrieved, ids)
		}
		out[q] = fl
	}
	return out, nil
}

// Record writes the run's TrainRecordFile (the collection at path, trained to iteration T),
// or on resume checks the collection against it.
func (c *Collection) Record(runDir, path string, T int, resume bool) error {
	rec := TrainRecord{File: path, SHA256: c.SHA256, Retriever: c.Retriever, Iterations: T}
	if abs, err := filepath.Abs(path); err == nil {
		rec.File = abs
	}
	p := filepath.Join(runDir, TrainRecordFile)
	if resume {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		var old TrainRecord
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("resume: %s: %w", p, err)
		}
		if old.SHA256 != rec.SHA256 {
			return fmt.Errorf("resume %s: -feedback %s changed since the run started (sha256 %.12s, recorded %.12s)", runDir, path, rec.SHA256, old.SHA256)
		}
		return nil
	}
	return rundir.WriteJSON(runDir, TrainRecordFile, rec)
}
