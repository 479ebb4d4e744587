package tokenize

import (
	"fmt"
	"sort"
	"strings"
)

// BuildVocab trains a WordPiece vocabulary of at most size tokens on texts, for models trained
// from scratch (no external vocab needed). It follows HF's WordPiece training: words are
// normalised and pre-tokenised like BERT (lowercased if lower), split into characters (non-
// initial ones with the "##" prefix), and adjacent pieces are merged greedily, best pair
// first by the WordPiece score count(ab) / (count(a) * count(b)) with ties broken by count then
// lexical order, until the vocabulary is full or no pair occurs minFreq times. The result
// starts with [PAD] [UNK] [CLS] [SEP] [MASK], then the characters, then merged pieces; it
// is deterministic.
func BuildVocab(texts []string, size, minFreq int, lower bool) ([]string, error) {
	specials := []string{PAD, UNK, CLS, SEP, MASK}
	if size <= len(specials) {
		return nil, fmt.Errorf("vocab size %d too small", size)
	}
	minFreq = max(minFreq, 1)
	norm := &Tokenizer{lower: lower, stripAccents: lower, chineseChars: true}
	wordFreq := map[string]int{}
	for _, s := range texts {
		for _, w := range preTokenize(norm.normalize(s)) {
			wordFreq[w]++
		}
	}
	type word struct {
		pieces []string
		freq   int
	}
	var words []word
	var keys []string
	for w := range wordFreq {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	inVocab := map[string]bool{}
	var vocab []string
	add := func(p string) {
		if !inVocab[p] {
			inVocab[p] = true
			vocab = append(vocab, p)
		}
	}
	for _, s := range specials {
		add(s)
	}
	var chars []string
	charSet := map[string]bool{}
	for _, k := range keys {
		rs := []rune(k)
		if len(rs) > 100 {
			continue // becomes [UNK] anyway
		}
		ps := make([]string, len(rs))
		for i, r := range rs {
			ps[i] = string(r)
			if i > 0 {
				ps[i] = "##" + ps[i]
			}
			if !charSet[ps[i]] {
				charSet[ps[i]] = true
				chars = append(chars, ps[i])
			}
		}
		words = append(words, word{ps, wordFreq[k]})
	}
	sort.Strings(chars)
	for _, c := range chars {
		add(c)
	}
	for len(vocab) < size {
		pair := map[[2]string]int{}
		unit := map[string]int{}
		for _, w := range words {
			for i, p := range w.pieces {
				unit[p] += w.freq
				if i > 0 {
					pair[[2]string{w.pieces[i-1], p}] += w.freq
				}
			}
		}
		var best [2]string
		bestScore, bestCount := -1.0, 0
		for pr, c := range pair {
			if c < minFreq {
				continue
			}
			score := float64(c) / (float64(unit[pr[0]]) * float64(unit[pr[1]]))
			if score > bestScore || (score == bestScore && (c > bestCount || (c == bestCount && pr[0]+pr[1] < best[0]+best[1]))) {
				best, bestScore, bestCount = pr, score, c
			}
		}
		if bestScore < 0 {
			break
		}
		merged := best[0] + strings.TrimPrefix(best[1], "##")
		add(merged)
		for wi := range words {
			ps := words[wi].pieces
			out := ps[:0:0]
			for i := 0; i < len(ps); i++ {
				if i+1 < len(ps) && ps[i] == best[0] && ps[i+1] == best[1] {
					out = append(out, merged)
					i++
				} else {
					out = append(out, ps[i])
				}
			}
			words[wi].pieces = out
		}
	}
	return vocab, nil
}
