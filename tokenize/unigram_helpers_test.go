package tokenize

import (
	"encoding/binary"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// buildCharsmap makes a precompiled charsmap in SentencePiece's format (a Darts-clone double
// array over the keys' bytes, values pointing into NUL-terminated replacements) for tests
// and fuzz seeds. Children of a node are placed at base^label for the smallest base that is
// unused (as Darts-clone, so a label read at base^label can only be that node's child) and
// whose slots are free.
func buildCharsmap(rules map[string]string) []byte {
	keys := make([]string, 0, len(rules))
	for k := range rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var norm []byte
	value := map[string]uint32{}
	for _, k := range keys {
		value[k] = uint32(len(norm))
		norm = append(append(norm, rules[k]...), 0)
	}
	// A node is a key prefix; its children are the next bytes, label 0 for a leaf value.
	type node struct {
		prefix string
		pos    uint32
	}
	units := []uint32{0}
	used := map[uint32]bool{0: true}
	usedBase := map[uint32]bool{}
	queue := []node{{"", 0}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		labels := map[byte]bool{}
		leaf := false
		for _, k := range keys {
			if len(k) > len(n.prefix) && k[:len(n.prefix)] == n.prefix {
				labels[k[len(n.prefix)]] = true
			} else if k == n.prefix && n.prefix != "" {
				leaf = true
			}
		}
		if len(labels) == 0 && !leaf {
			continue
		}
		var base uint32
		for base = 1; ; base++ {
			ok := !usedBase[base] && (!leaf || !used[base])
			for l := range labels {
				ok = ok && !used[base^uint32(l)]
			}
			if ok {
				break
			}
		}
		grow := func(p uint32) {
			for uint32(len(units)) <= p {
				units = append(units, 0)
			}
			used[p] = true
		}
		usedBase[base] = true
		off := n.pos ^ base
		units[n.pos] |= off << 10
		if leaf {
			units[n.pos] |= 1 << 8
			grow(base)
			units[base] = 1<<31 | value[n.prefix]
		}
		ls := make([]int, 0, len(labels))
		for l := range labels {
			ls = append(ls, int(l))
		}
		sort.Ints(ls)
		for _, l := range ls {
			p := base ^ uint32(l)
			grow(p)
			units[p] = uint32(l)
			queue = append(queue, node{n.prefix + string([]byte{byte(l)}), p})
		}
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(4*len(units)))
	for _, u := range units {
		out = binary.LittleEndian.AppendUint32(out, u)
	}
	return append(out, norm...)
}

type testPiece struct {
	piece string
	score float32
	typ   int
}

// buildSPModel serializes a ModelProto with pieces, trainer_spec.model_type and a
// normalizer_spec with charsmap (nil: none).
func buildSPModel(pieces []testPiece, modelType int, charsmap []byte) []byte {
	var b []byte
	for _, p := range pieces {
		var m []byte
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendString(m, p.piece)
		m = protowire.AppendTag(m, 2, protowire.Fixed32Type)
		m = protowire.AppendFixed32(m, math.Float32bits(p.score))
		m = protowire.AppendTag(m, 3, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(p.typ))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	var ts []byte
	ts = protowire.AppendTag(ts, 3, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(modelType))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	var ns []byte
	ns = protowire.AppendTag(ns, 1, protowire.BytesType)
	ns = protowire.AppendString(ns, "test")
	if charsmap != nil {
		ns = protowire.AppendTag(ns, 2, protowire.BytesType)
		ns = protowire.AppendBytes(ns, charsmap)
	}
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, ns)
}

// tinyRules are a few nmt_nfkc-like rules.
var tinyRules = map[string]string{
	"\t": " ", "\n": " ", "\u3000": " ", "\u200b": "", "\x01": "", "Ａ": "A", "ｂ": "b", "ﬁ": "fi",
	"ｶﾞ": "ガ", "e\u0301": "é", "①": "1",
}

// tinyPieces is a DeBERTa-like vocabulary: [PAD] [CLS] [SEP] [UNK] then pieces.
var tinyPieces = []testPiece{
	{"[PAD]", 0, pieceControl}, {"[CLS]", 0, pieceControl}, {"[SEP]", 0, pieceControl}, {"[UNK]", 0, pieceUnknown},
	{"▁", -2, pieceNormal}, {"a", -3, pieceNormal}, {"b", -3, pieceNormal}, {"▁a", -2.5, pieceNormal},
	{"ab", -2.5, pieceNormal}, {"▁ab", -4, pieceNormal}, {"A", -4, pieceNormal}, {"fi", -3, pieceNormal},
	{"0", -3, pieceNormal}, {"00", -6, pieceNormal}, {"é", -5, pieceNormal}, {"<x>", 0, pieceUserDefined},
	{"zz", -1, pieceUnused}, {"z", -7, pieceNormal},
}
