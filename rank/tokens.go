package rank

// QueryTokenizer is implemented by rankers that read each query through one encoder with a
// fixed token budget. QueryTokens returns the number of tokens text encodes to before
// truncation ([CLS] and [SEP] and any query prompt included) and the budget the encoder keeps
// (limit <= 0: no budget, or the ranker cannot tell). Evaluation uses it to report how the
// queries the encoder cuts short fare against the rest.
type QueryTokenizer interface {
	QueryTokens(text string) (n, limit int)
}

// QueryTokens implements QueryTokenizer for a Ranker wrapped by Texts: the wrapped ranker's
// counts, or limit 0 when it does not count tokens.
func (t texts) QueryTokens(text string) (n, limit int) {
	if q, ok := t.r.(QueryTokenizer); ok {
		return q.QueryTokens(text)
	}
	return 0, 0
}
