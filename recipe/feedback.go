package recipe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// FeedbackRecord is RUN/feedback.json (FeedbackRecordFile): the collection a run was trained on, so that a
// resumed run refuses a file that changed.
type FeedbackRecord struct {
	File       string `json:"file"`
	SHA256     string `json:"sha256"`
	Retriever  string `json:"retriever"`
	Iterations int    `json:"iterations"`
}

// FeedbackRecordFile is the name of a feedback run's FeedbackRecord.
const FeedbackRecordFile = "feedback.json"

// trainFeedback is a feedback collection read for training.
type trainFeedback struct {
	header feedback.Header
	loops  []feedback.Loop
	sha    string
	// retriever is the run whose recorded dev split the training takes: -retriever, else the
	// collection's.
	retriever string
}

// readFeedback reads the collection at path for data d, checking it was collected on d.
func readFeedback(path, retriever string, d *data.Dataset) (*trainFeedback, error) {
	h, loops, err := feedback.Read(path)
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
	fb := &trainFeedback{header: h, loops: loops, sha: hex.EncodeToString(hash.Sum(nil)), retriever: retriever}
	if fb.retriever == "" {
		fb.retriever = h.Settings["retriever"]
		if fb.retriever == "" {
			return nil, fmt.Errorf("-feedback %s: the record names no retriever: give -retriever RUN (the run whose dev split the training takes)", path)
		}
	}
	return fb, nil
}

// iterations resolves -iterations against the collection.
func (fb *trainFeedback) iterations(flagT int) (int, error) {
	if flagT == 0 {
		return fb.header.Iterations, nil
	}
	if flagT > fb.header.Iterations {
		return 0, fmt.Errorf("-iterations %d: the collection has %d", flagT, fb.header.Iterations)
	}
	return flagT, nil
}

// loopsOf returns the recorded loops of the judged queries of train (queries of the
// collection's split from, the split train was carved from), as the task takes them: a loop
// must be finished or reach iteration T.
func (fb *trainFeedback) loopsOf(d *data.Dataset, train *data.Split, from string, T int) (map[int]biencoder.FeedbackLoop, error) {
	want := map[int]bool{}
	for _, q := range train.Judged() {
		want[q] = true
	}
	out := map[int]biencoder.FeedbackLoop{}
	for _, lp := range fb.loops {
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

// record writes RUN/feedback.json, or on resume checks the collection against it.
func (fb *trainFeedback) record(runDir, path string, T int, resume bool) error {
	rec := FeedbackRecord{File: path, SHA256: fb.sha, Retriever: fb.retriever, Iterations: T}
	if abs, err := filepath.Abs(path); err == nil {
		rec.File = abs
	}
	p := filepath.Join(runDir, FeedbackRecordFile)
	if resume {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		var old FeedbackRecord
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("resume: %s: %w", p, err)
		}
		if old.SHA256 != rec.SHA256 {
			return fmt.Errorf("resume %s: -feedback %s changed since the run started (sha256 %.12s, recorded %.12s)", runDir, path, rec.SHA256, old.SHA256)
		}
		return nil
	}
	return rundir.WriteJSON(runDir, FeedbackRecordFile, rec)
}
