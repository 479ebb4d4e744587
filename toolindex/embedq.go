package toolindex

import "context"

// EmbedQueries returns the query-tower embeddings of texts the way retrieval embeds its
// queries: through the query cache (WithQueryCache) and dynamic batching (WithBatching), so
// that the texts of concurrent callers share encoder calls. The vectors may be shared with
// the cache and other callers: read them, never change them.
func (r *Index) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.qe.embed(ctx, texts)
}
