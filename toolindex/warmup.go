package toolindex

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/tokenize"
)

// WarmupReport says what Warmup ran.
type WarmupReport struct {
	// Lengths are the padded lengths of the query tower that were run (the tokenizer's length
	// buckets up to the tower's max length, and the max length).
	Lengths []int
	// Shapes is the number of encoder calls of distinct input shapes (rows × padded length,
	// per tower); Retrievals the full retrievals (one per query length).
	Shapes, Retrievals int
	Duration           time.Duration
}

// WarmupTokens bounds the batches Warmup runs of more than one text: rows × padded length
// at most this many tokens (the batches concurrent short queries make; a long query in a
// large batch is rare, and costs the most to run).
const WarmupTokens = 512

// maxMapRows is the most rows export.Model.Embed runs at once (encoder.Map's batch): larger
// batches are cut into batches of this many.
const maxMapRows = 32

// Warmup runs the models once on every input shape a request can give them, so that the
// backend compiles and allocates before the first request rather than during it (a graph is
// compiled per input shape; on the go backend the first call of a shape costs ~10x a later
// one). The query tower embeds texts of every padded length (the tokenizer's length buckets
// up to the tower's max length) in batches of 1, 2, 4, ... up to maxRows texts (the encoder's
// row buckets; maxRows <= 0: 1 only, capped at 32) of at most WarmupTokens tokens (rows ×
// length) beyond one text; the tool tower (when the index has one of
// its own) texts of every length, one at a time; then one retrieval per query length runs
// every later stage (the query batcher, exact or HNSW search, hybrid, reranker, refiner);
// an ensemble's members are warmed up the same way first.
// The warm-up retrievals count in Stats and their texts stay in the query cache.
func (r *Index) Warmup(ctx context.Context, maxRows int) (WarmupReport, error) {
	start := time.Now()
	rep := WarmupReport{}
	maxRows = min(max(maxRows, 1), maxMapRows)
	type shape struct {
		m          *export.Model
		rows, plen int
	}
	done := map[shape]bool{}
	run := func(tower string, m *export.Model, rowsUpTo int) ([]string, []int, error) {
		if m == nil || m.Tok == nil || len(m.Towers) == 0 {
			return nil, nil, nil
		}
		maxLen, prompt := towerLen(m, tower), towerPrompt(m, tower)
		var texts []string
		var lengths []int
		prev := 0
		for _, l := range padLengths(m.Tok, maxLen) {
			s, n := textOfLength(m.Tok, prompt, l, maxLen)
			if n <= prev { // the prompt alone is longer than this bucket
				prev = l
				continue
			}
			prev = l
			texts, lengths = append(texts, s), append(lengths, l)
			for rows := 1; rows <= rowsUpTo && (rows == 1 || rows*l <= WarmupTokens); rows *= 2 {
				if err := ctx.Err(); err != nil {
					return nil, nil, err
				}
				if done[shape{m, rows, l}] {
					continue
				}
				done[shape{m, rows, l}] = true
				batch := make([]string, rows)
				for i := range batch {
					batch[i] = s
				}
				if _, err := r.Embed(tower, batch); err != nil {
					return nil, nil, fmt.Errorf("warm-up: %d %s texts of %d tokens: %w", rows, tower, l, err)
				}
				rep.Shapes++
			}
		}
		return texts, lengths, nil
	}
	queries, lengths, err := run(biencoder.QueryTower, r.query, maxRows)
	if err != nil {
		return rep, err
	}
	rep.Lengths = lengths
	if r.CanEmbedTools() == nil && r.tool != nil {
		if _, _, err := run(biencoder.ToolTower, r.tool, 1); err != nil {
			return rep, err
		}
	}
	if r.ens != nil {
		for i, m := range r.ens.members {
			mr, err := m.Warmup(ctx, maxRows)
			if err != nil {
				return rep, fmt.Errorf("warm-up: ensemble member %s: %w", r.ens.dirs[i], err)
			}
			rep.Shapes += mr.Shapes
		}
	}
	if len(queries) == 0 {
		queries = []string{"tool"}
	}
	lib := r.Library()
	k := min(10, lib.Len())
	for _, q := range queries {
		if k == 0 {
			break
		}
		if _, err := r.RetrieveFrom(ctx, lib, []string{q}, k); err != nil {
			return rep, fmt.Errorf("warm-up: retrieval: %w", err)
		}
		rep.Retrievals++
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// towerLen is the max length Embed cuts tower's texts to.
func towerLen(m *export.Model, tower string) int {
	maxLen := m.Towers[0].MaxLen
	if t, err := m.Tower(tower); err == nil {
		maxLen = t.MaxLen
	}
	switch {
	case tower == biencoder.QueryTower && m.QueryMaxLen > 0:
		maxLen = min(maxLen, m.QueryMaxLen)
	case tower == biencoder.ToolTower && m.ToolMaxLen > 0:
		maxLen = min(maxLen, m.ToolMaxLen)
	}
	return maxLen
}

// towerPrompt is the prefix Embed puts before tower's texts.
func towerPrompt(m *export.Model, tower string) string {
	if tower == biencoder.QueryTower {
		return m.QueryPrompt
	}
	return m.ToolPrompt
}

// padLengths returns the padded lengths a batch of tok's sequences of at most maxLen tokens
// can get: the buckets below maxLen, then maxLen.
func padLengths(tok *tokenize.Tokenizer, maxLen int) []int {
	buckets := tok.Buckets
	if buckets == nil {
		buckets = tokenize.DefaultBuckets
	}
	var out []int
	for _, b := range buckets {
		if b < maxLen && (len(out) == 0 || b > out[len(out)-1]) {
			out = append(out, b)
		}
	}
	return append(out, maxLen)
}

// textOfLength returns a text that tokenizes (after prompt, cut at maxLen) to at most l tokens,
// as close to l as a repeated word gets, and its token count.
func textOfLength(tok *tokenize.Tokenizer, prompt string, l, maxLen int) (string, int) {
	for words := max(l-2, 1); ; words-- {
		s := strings.TrimSpace(strings.Repeat("tool ", words))
		n := len(tok.Single(prompt+s, maxLen))
		if n <= l || words == 1 {
			return s, n
		}
	}
}
