package traincmd

import (
	"flag"

	"github.com/toolret/toolret/models/biencoder"
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
		file:       fs.String("feedback", "", "train iteration-aware on a feedback collection (train feedback -out FILE): every instruction q^0..q^T of the training queries, marked with -marker; the dev split is the collection's -first-stage run's (give -first-stage to name it when it moved)"),
		iterations: fs.Int("iterations", 0, "-feedback: the last iteration T trained (0: the collection's -iterations)"),
		alpha:      fs.Float64("alpha", 1, "-feedback: the loss is Σ_t alpha^t · InfoNCE(q^t)"),
		marker:     fs.String("marker", biencoder.DefaultMarker, "-feedback: the iteration marker, a format with one %d, put before q^t in training and in the iterative retrieval (empty: none)"),
		joint:      fs.Bool("feedback-joint", true, "-feedback: train every iteration of a query in its batch (false: its last instruction only, an ablation)"),
		hardNegs:   fs.Bool("feedback-hard-negatives", true, "-feedback: one hard negative per instruction from the incorrect tools of its recorded top K (false: in-batch negatives only, an ablation)"),
	}
}

// isBiEncoderRun reports whether path is a bi-encoder run or checkpoint (biencoder.IsRun).
func isBiEncoderRun(path string) bool { return biencoder.IsRun(path) }
