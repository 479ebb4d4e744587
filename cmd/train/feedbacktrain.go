package traincmd

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// feedbackFlags are train biencoder's flags of iteration-aware training on a feedback
// collection (train feedback).
type feedbackFlags struct {
	file            *string
	iterations      *int
	alpha           *float64
	marker          *string
	joint, hardNegs *bool
}

func addFeedbackFlags(fs *flag.FlagSet) *feedbackFlags {
	return &feedbackFlags{
		file:       fs.String("feedback", "", "train iteration-aware on a feedback collection (train feedback -out FILE): every instruction q^0..q^T of the training queries, marked with -marker; the dev split is the collection's -retriever run's (give -retriever to name it when it moved)"),
		iterations: fs.Int("iterations", 0, "-feedback: the last iteration T trained (0: the collection's -iterations)"),
		alpha:      fs.Float64("alpha", 1, "-feedback: the loss is Σ_t alpha^t · InfoNCE(q^t)"),
		marker:     fs.String("marker", biencoder.DefaultMarker, "-feedback: the iteration marker, a format with one %d, put before q^t in training and in the iterative retrieval (empty: none)"),
		joint:      fs.Bool("feedback-joint", true, "-feedback: train every iteration of a query in its batch (false: its last instruction only, an ablation)"),
		hardNegs:   fs.Bool("feedback-hard-negatives", true, "-feedback: one hard negative per instruction from the incorrect tools of its recorded top K (false: in-batch negatives only, an ablation)"),
	}
}

// check validates the flags (f.file given) against the others of the command.
func (f *feedbackFlags) check(fs *flag.FlagSet, hardNeg int, negFile string, q2q bool) error {
	if *f.file == "" {
		for _, n := range []string{"iterations", "alpha", "marker", "feedback-joint", "feedback-hard-negatives"} {
			if fl := fs.Lookup(n); fl.Value.String() != fl.DefValue { // a resumed run sets every flag, to its default here
				return fmt.Errorf("-%s is a flag of -feedback training", n)
			}
		}
		return nil
	}
	switch {
	case q2q:
		return fmt.Errorf("-feedback trains queries against tools: not with -objective %s", biencoder.ObjectiveQuery2Query)
	case hardNeg > 0 || negFile != "":
		return errors.New("-feedback draws its hard negatives from the collection's top K (-feedback-hard-negatives): not with -hard-negatives or -negatives")
	case *f.iterations < 0:
		return fmt.Errorf("-iterations %d: must be >= 0", *f.iterations)
	case !(*f.alpha > 0):
		return fmt.Errorf("-alpha %v: must be > 0", *f.alpha)
	}
	if *f.marker != "" {
		if err := biencoder.CheckMarker(*f.marker); err != nil {
			return fmt.Errorf("-marker: %w", err)
		}
	}
	return nil
}

// trainFeedback is a feedback collection read for training (feedback.Collection); retriever
// is the run whose recorded dev split the training takes.
type trainFeedback struct {
	*feedback.Collection
	retriever string
}

// readFeedback reads the collection at path for data d (feedback.ReadCollection).
func readFeedback(path, retriever string, d *data.Dataset) (*trainFeedback, error) {
	c, err := feedback.ReadCollection(path, retriever, d)
	if err != nil {
		return nil, err
	}
	return &trainFeedback{Collection: c, retriever: c.Retriever}, nil
}

// iterations resolves -iterations against the collection.
func (fb *trainFeedback) iterations(flagT int) (int, error) { return fb.Iterations(flagT) }

// loopsOf returns the loops of train's judged queries (feedback.Collection.TrainingLoops).
func (fb *trainFeedback) loopsOf(d *data.Dataset, train *data.Split, from string, T int) (map[int]biencoder.FeedbackLoop, error) {
	return fb.TrainingLoops(d, train, from, T)
}

// record writes RUN/feedback.json, or on resume checks the collection against it.
func (fb *trainFeedback) record(runDir, path string, T int, resume bool) error {
	return fb.Record(runDir, path, T, resume)
}

// isBiEncoderRun reports whether path is a bi-encoder run or checkpoint (biencoder.IsRun).
func isBiEncoderRun(path string) bool { return biencoder.IsRun(path) }

// initFromRun warm-starts a bi-encoder from the trained bi-encoder run at path (-init RUN): its
// shared encoder and tokenizer (as biencoder.WarmStart loads them, positions extended to maxLen), its
// pooling and similarity (-pooling and -similarity, when given, must agree).
func initFromRun(fs *flag.FlagSet, path string, bk compute.Backend, store *model.Store, maxLen int, seed uint64, pooling, sim *string) (encoder.Config, *tokenize.Tokenizer, error) {
	_, cb, _, err := rundir.LoadCheckpoint(path, biencoder.ConfigFile)
	if err != nil {
		return nil, nil, fmt.Errorf("-init: %w", err)
	}
	rc, err := biencoder.Unmarshal(cb)
	if err != nil {
		return nil, nil, fmt.Errorf("-init %s: %w", path, err)
	}
	set := cli.Set(fs)
	switch {
	case !rc.Shared:
		return nil, nil, fmt.Errorf("-init %s: a bi-encoder with separate towers; export its query tower with export -format hf and give that directory", path)
	case rc.Pooling == encoder.PoolPooler:
		return nil, nil, fmt.Errorf("-init %s: pooling %s is not carried over from a run; export it with export -format hf and give that directory", path, rc.Pooling)
	case rc.Objective == biencoder.ObjectiveQuery2Query:
		return nil, nil, fmt.Errorf("-init %s: a %s run", path, rc.Objective)
	case set["pooling"] && *pooling != string(rc.Pooling):
		return nil, nil, fmt.Errorf("-pooling %s: -init %s pools with %s", *pooling, path, rc.Pooling)
	case set["similarity"] && *sim != rc.Similarity:
		return nil, nil, fmt.Errorf("-similarity %s: -init %s scores by %s", *sim, path, rc.Similarity)
	}
	*pooling, *sim = string(rc.Pooling), rc.Similarity
	return biencoder.WarmStart(path, bk, store, maxLen, seed, os.Stderr)
}
