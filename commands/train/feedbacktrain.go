package traincmd

import "github.com/toolret/toolret/models/biencoder"

// isBiEncoderRun reports whether path is a bi-encoder run or checkpoint (biencoder.IsRun).
func isBiEncoderRun(path string) bool { return biencoder.IsRun(path) }
