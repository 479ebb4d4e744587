package recipe

import (
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
)

// FeedbackRecord is RUN/feedback.json (FeedbackRecordFile): the collection a run was trained
// on, so that a resumed run refuses a file that changed (feedback.TrainRecord).
type FeedbackRecord = feedback.TrainRecord

// FeedbackRecordFile is the name of a feedback run's FeedbackRecord.
const FeedbackRecordFile = feedback.TrainRecordFile

// trainFeedback is a feedback collection read for training (feedback.Collection); retriever
// is the run whose recorded dev split the training takes: -first-stage, else the collection's.
type trainFeedback struct {
	*feedback.Collection
	retriever string
}

// readFeedback reads the collection at path for data d, checking it was collected on d.
func readFeedback(path, retriever string, d *data.Dataset) (*trainFeedback, error) {
	c, err := feedback.ReadCollection(path, retriever, d)
	if err != nil {
		return nil, err
	}
	return &trainFeedback{Collection: c, retriever: c.Retriever}, nil
}
