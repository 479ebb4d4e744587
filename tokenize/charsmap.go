package tokenize

import (
	"encoding/binary"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// charsmap is a SentencePiece precompiled_charsmap (NormalizerSpec field 2): a little-endian
// uint32 trie size in bytes, a Darts-clone double-array trie of uint32 units whose keys are
// UTF-8 byte strings and whose values are offsets into the normalized blob that follows,
// where each replacement runs up to the next NUL. nmt_nfkc's is about 240 kB.
type charsmap struct {
	units []uint32
	norm  []byte
	nuls  []int // positions of the NULs in norm, ascending
	raw   []byte
}

// maxCharsmapKey bounds a trie walk in bytes. Real charsmaps have keys of a few characters
// (nmt_nfkc's longest is 30 bytes); a hostile trie with a cycle would otherwise make
// normalisation quadratic in the text length.
const maxCharsmapKey = 256

// maxReplacement bounds a rule's replacement, so normalisation grows a text at most this
// many times (NFKC's longest expansion, U+FDFA, is 33 bytes).
const maxReplacement = 256

// parseCharsmap decodes blob. hf selects HF tokenizers' reading (the normalized part starts
// after the whole units and must be UTF-8) over SentencePiece's (it starts after the
// declared trie size).
func parseCharsmap(blob []byte, hf bool) (*charsmap, error) {
	if len(blob) < 4 {
		return nil, fmt.Errorf("precompiled charsmap of %d bytes is too short", len(blob))
	}
	size := binary.LittleEndian.Uint32(blob)
	if uint64(size) > uint64(len(blob)-4) {
		return nil, fmt.Errorf("precompiled charsmap: trie size %d exceeds the %d bytes that follow", size, len(blob)-4)
	}
	c := &charsmap{units: make([]uint32, size/4), raw: blob}
	for i := range c.units {
		c.units[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	if hf {
		c.norm = blob[4+4*len(c.units):]
		if !utf8.Valid(c.norm) {
			return nil, fmt.Errorf("precompiled charsmap: normalized strings are not valid UTF-8")
		}
	} else {
		c.norm = blob[4+size:]
	}
	last := -1
	for i, b := range c.norm {
		if b == 0 {
			c.nuls = append(c.nuls, i)
			if i-last-1 > maxReplacement {
				return nil, fmt.Errorf("precompiled charsmap: a replacement of %d bytes (more than %d)", i-last-1, maxReplacement)
			}
			last = i
		}
	}
	if n := len(c.norm) - last - 1; n > maxReplacement {
		return nil, fmt.Errorf("precompiled charsmap: a replacement of %d bytes (more than %d)", n, maxReplacement)
	}
	return c, nil
}

// Darts-clone unit fields.
func unitHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func unitValue(u uint32) uint32  { return u & (1<<31 - 1) }
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }

// prefixes calls f(length, value) for each key of the trie that is a prefix of key, shortest
// first, until f returns false. Like Darts-clone's commonPrefixSearch, with every unit
// access bounds-checked (an out-of-range position ends the search) and walks cut at
// maxCharsmapKey bytes; stopAtNUL ends the walk at a NUL byte, as HF's spm_precompiled does.
func (c *charsmap) prefixes(key string, stopAtNUL bool, f func(n int, v uint32) bool) {
	if len(c.units) == 0 {
		return
	}
	pos := unitOffset(c.units[0])
	for i := 0; i < len(key) && i < maxCharsmapKey; i++ {
		b := key[i]
		if stopAtNUL && b == 0 {
			return
		}
		pos ^= uint32(b)
		if uint64(pos) >= uint64(len(c.units)) {
			return
		}
		u := c.units[pos]
		if unitLabel(u) != uint32(b) {
			return
		}
		pos ^= unitOffset(u)
		if unitHasLeaf(u) {
			if uint64(pos) >= uint64(len(c.units)) {
				return
			}
			if !f(i+1, unitValue(c.units[pos])) {
				return
			}
		}
	}
}

// replacement returns the normalized string at offset v (up to the next NUL) and false when
// v is outside the blob.
func (c *charsmap) replacement(v uint32) (string, bool) {
	if uint64(v) > uint64(len(c.norm)) {
		return "", false
	}
	i := int(v)
	end := len(c.norm)
	if k := sort.SearchInts(c.nuls, i); k < len(c.nuls) {
		end = c.nuls[k]
	}
	return string(c.norm[i:end]), true
}

// spmPrefix is SentencePiece's Normalizer::NormalizePrefix for the charsmap: the longest of
// the (at most 32, as SentencePiece keeps) keys that prefix s, with its replacement.
func (c *charsmap) spmPrefix(s string) (n int, rep string) {
	k := 0
	c.prefixes(s, false, func(l int, v uint32) bool {
		if r, ok := c.replacement(v); ok && l > n {
			n, rep = l, r
		}
		k++
		return k < 32
	})
	return n, rep
}

// hfTransform is HF's Precompiled::transform: the replacement of the shortest key that
// prefixes chunk.
func (c *charsmap) hfTransform(chunk string) (string, bool) {
	rep, found := "", false
	c.prefixes(chunk, true, func(_ int, v uint32) bool {
		rep, found = c.replacement(v)
		return false
	})
	return rep, found
}

// hfNormalize is HF tokenizers' Precompiled normalizer: per extended grapheme cluster, a
// cluster shorter than 6 bytes with a rule is replaced whole by the rule of its shortest
// matching prefix; otherwise each character is replaced by its own rule, if any.
func (c *charsmap) hfNormalize(s string) string {
	out := make([]byte, 0, len(s))
	state := -1
	for len(s) > 0 {
		var g string
		g, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		if len(g) < 6 {
			if rep, ok := c.hfTransform(g); ok {
				out = append(out, rep...)
				continue
			}
		}
		for len(g) > 0 {
			_, n := utf8.DecodeRuneInString(g)
			if rep, ok := c.hfTransform(g[:n]); ok {
				out = append(out, rep...)
			} else {
				out = append(out, g[:n]...)
			}
			g = g[n:]
		}
	}
	return string(out)
}
