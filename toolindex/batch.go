package toolindex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/toolret/toolret/models/biencoder"
)

// Batching configures dynamic batching of query embeddings across concurrent calls: queries
// that arrive while the encoder is busy, or within MaxWait of the first waiting one, are
// embedded together, up to MaxBatch texts and MaxTokens tokens per encoder call (as
// text-embeddings-inference and infinity batch by token budget).
//
// The tags declare serve's -embed-batch, -embed-tokens and -embed-wait (package internal/flagcfg).
type Batching struct {
	MaxBatch  int           `flag:"embed-batch" help:"dynamic batching: most query texts of concurrent requests embedded in one encoder call (0: each request alone)"` // texts per encoder call (> 0)
	MaxTokens int           `flag:"embed-tokens" help:"dynamic batching: most tokens in one encoder call"`                                                             // tokens per encoder call, [CLS] and [SEP] included (> 0)
	MaxWait   time.Duration `flag:"embed-wait" help:"dynamic batching: longest a query waits for others to share its encoder call"`                                    // longest a query waits for others to fill its batch (>= 0)
}

// DefaultBatching is what serve uses unless told otherwise.
var DefaultBatching = Batching{MaxBatch: 64, MaxTokens: 4096, MaxWait: 2 * time.Millisecond}

// WithBatching embeds queries of concurrent calls together (Batching); zero MaxBatch turns
// batching off (each call embeds its own queries, as without the option).
func WithBatching(b Batching) Option { return func(o *options) { o.batching = b } }

// WithQueryCache keeps the embeddings of the n most recently embedded query texts (an LRU
// cache keyed by the text, per loaded index and so per model); 0 turns it off.
func WithQueryCache(n int) Option { return func(o *options) { o.cacheSize = n } }

// EmbedStats counts the query embeddings of an Index.
type EmbedStats struct {
	CacheHits, CacheMisses int64
	// Batches is the number of encoder calls for queries; Texts the texts they embedded.
	Batches, Texts int64
	// ToolTexts counts the tool texts embedded with the tool tower (Embed): tools added or
	// changed since the index was loaded (Sync embeds only those).
	ToolTexts int64
}

// Stats returns the counts of query embeddings so far.
func (r *Index) Stats() EmbedStats {
	return EmbedStats{CacheHits: r.stats.hits.Load(), CacheMisses: r.stats.misses.Load(),
		Batches: r.stats.batches.Load(), Texts: r.stats.texts.Load(), ToolTexts: r.stats.toolTexts.Load()}
}

type embedStats struct{ hits, misses, batches, texts, toolTexts atomic.Int64 }

// queryEmbedder embeds query texts through the cache and the batcher.
type queryEmbedder struct {
	r     *Index
	cache *lru.Cache[string, []float32]
	b     Batching
	reqs  chan *embedReq
	once  sync.Once
	// coming counts the callers of batched whose request the loop has not taken yet (those
	// tokenizing their texts, and those queued): while it is 0 no caller is on its way and
	// the loop runs the batch at once instead of waiting MaxWait.
	coming atomic.Int64
}

type embedReq struct {
	texts  []string
	tokens int
	out    [][]float32
	err    error
	done   chan struct{}
}

func newQueryEmbedder(r *Index, b Batching, cacheSize int) (*queryEmbedder, error) {
	if b.MaxBatch < 0 || b.MaxBatch > 0 && (b.MaxTokens <= 0 || b.MaxWait < 0) {
		return nil, fmt.Errorf("retriever: batching %+v: want MaxBatch >= 0, and with MaxBatch > 0 MaxTokens > 0 and MaxWait >= 0", b)
	}
	if cacheSize < 0 {
		return nil, fmt.Errorf("retriever: query cache of %d entries: want >= 0", cacheSize)
	}
	q := &queryEmbedder{r: r, b: b}
	if cacheSize > 0 {
		c, err := lru.New[string, []float32](cacheSize)
		if err != nil {
			return nil, fmt.Errorf("retriever: query cache: %w", err)
		}
		q.cache = c
	}
	return q, nil
}

// embed returns the query embeddings of texts: cached ones from the cache, the others
// through the batcher (or directly without batching).
func (q *queryEmbedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []string
	var at []int
	for i, t := range texts {
		if q.cache != nil {
			if v, ok := q.cache.Get(t); ok {
				out[i] = v
				q.r.stats.hits.Add(1)
				continue
			}
		}
		q.r.stats.misses.Add(1)
		miss, at = append(miss, t), append(at, i)
	}
	if len(miss) == 0 {
		return out, nil
	}
	var emb [][]float32
	var err error
	if q.b.MaxBatch > 0 {
		emb, err = q.batched(ctx, miss)
	} else {
		emb, err = q.direct(miss)
	}
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = emb[j]
		if q.cache != nil {
			q.cache.Add(miss[j], emb[j])
		}
	}
	return out, nil
}

func (q *queryEmbedder) direct(texts []string) ([][]float32, error) {
	q.r.stats.batches.Add(1)
	q.r.stats.texts.Add(int64(len(texts)))
	return q.r.Embed(biencoder.QueryTower, texts)
}

// batched hands texts to the batching loop and waits for their embeddings.
func (q *queryEmbedder) batched(ctx context.Context, texts []string) ([][]float32, error) {
	q.once.Do(func() {
		q.reqs = make(chan *embedReq, 1024)
		go q.loop()
	})
	q.coming.Add(1)
	tokens := 0
	for _, t := range texts {
		n, err := q.r.Tokens(biencoder.QueryTower, t)
		if err != nil {
			q.coming.Add(-1)
			return nil, err
		}
		tokens += n
	}
	req := &embedReq{texts: texts, tokens: tokens, done: make(chan struct{})}
	select {
	case q.reqs <- req:
	case <-ctx.Done():
		q.coming.Add(-1)
		return nil, ctx.Err()
	}
	select {
	case <-req.done:
		return req.out, req.err
	case <-ctx.Done():
		return nil, ctx.Err() // the batch still runs; its result is dropped
	}
}

// loop gathers requests into batches and embeds each batch with one encoder call. It runs
// for the Index's lifetime (a goroutine per loaded index that batches). A batch takes
// the requests queued (those that came while the encoder ran the last one), then waits up
// to MaxWait for callers on their way (coming), and not at all when there are none: a lone
// caller is not delayed.
func (q *queryEmbedder) loop() {
	var next *embedReq
	take := func() *embedReq { r := <-q.reqs; q.coming.Add(-1); return r }
	for {
		first := next
		if first == nil {
			first = take()
		}
		next = nil
		batch := []*embedReq{first}
		n, tokens := len(first.texts), first.tokens
		var timer *time.Timer
	gather:
		for n < q.b.MaxBatch && tokens < q.b.MaxTokens {
			var r *embedReq
			select {
			case r = <-q.reqs:
				q.coming.Add(-1)
			default:
				if q.coming.Load() == 0 || q.b.MaxWait <= 0 {
					break gather
				}
				if timer == nil {
					timer = time.NewTimer(q.b.MaxWait)
				}
				select {
				case r = <-q.reqs:
					q.coming.Add(-1)
				case <-timer.C:
					break gather
				}
			}
			if n+len(r.texts) > q.b.MaxBatch || tokens+r.tokens > q.b.MaxTokens {
				next = r // starts the next batch
				break
			}
			batch = append(batch, r)
			n, tokens = n+len(r.texts), tokens+r.tokens
		}
		if timer != nil {
			timer.Stop()
		}
		texts := make([]string, 0, n)
		for _, r := range batch {
			texts = append(texts, r.texts...)
		}
		emb, err := q.direct(texts)
		if err == nil && len(emb) != len(texts) {
			err = errors.New("retriever: the encoder returned another number of embeddings than texts")
		}
		off := 0
		for _, r := range batch {
			if err != nil {
				r.err = err
			} else {
				r.out = emb[off : off+len(r.texts)]
			}
			off += len(r.texts)
			close(r.done)
		}
	}
}
