package tokenize

import (
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// SentencePiece piece types (sentencepiece_model.proto, ModelProto.SentencePiece.Type).
const (
	pieceNormal      = 1
	pieceUnknown     = 2
	pieceControl     = 3
	pieceUserDefined = 4
	pieceUnused      = 5
	pieceByte        = 6
)

// spPiece is one ModelProto.SentencePiece.
type spPiece struct {
	piece string
	score float32
	typ   int
}

// spModel is the part of a SentencePiece ModelProto (spm.model) the Unigram tokenizer uses.
type spModel struct {
	pieces []spPiece
	// trainer_spec
	modelType    int // 1 = UNIGRAM (the default)
	byteFallback bool
	wsAsSuffix   bool // treat_whitespace_as_suffix
	// normalizer_spec
	normName       string
	charsmap       []byte
	addDummyPrefix bool
	removeExtraWS  bool
	escapeWS       bool
}

// maxPieces bounds the vocabulary (the largest SentencePiece models have about 256k pieces).
const maxPieces = 1 << 22

// parseSPModel decodes a serialized SentencePiece ModelProto with protowire (no generated
// code): pieces (field 1), trainer_spec (2: model_type 3, treat_whitespace_as_suffix 24,
// byte_fallback 35) and normalizer_spec (3: name 1, precompiled_charsmap 2,
// add_dummy_prefix 3, remove_extra_whitespaces 4, escape_whitespaces 5). Unknown fields are
// skipped; malformed input is an error naming the byte offset, never a panic. Allocation is
// bounded by the input size.
func parseSPModel(b []byte) (*spModel, error) {
	m := &spModel{modelType: 1, addDummyPrefix: true, removeExtraWS: true, escapeWS: true}
	err := walkProto(b, 0, func(num protowire.Number, typ protowire.Type, v []byte, x uint64, off int) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			if len(m.pieces) >= maxPieces {
				return fmt.Errorf("more than %d pieces", maxPieces)
			}
			p, err := parsePiece(v, off)
			if err != nil {
				return fmt.Errorf("piece %d: %w", len(m.pieces), err)
			}
			m.pieces = append(m.pieces, p)
		case num == 2 && typ == protowire.BytesType:
			return walkProto(v, off, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64, _ int) error {
				if typ != protowire.VarintType {
					return nil
				}
				switch num {
				case 3:
					m.modelType = int(int32(x))
				case 24:
					m.wsAsSuffix = x != 0
				case 35:
					m.byteFallback = x != 0
				}
				return nil
			})
		case num == 3 && typ == protowire.BytesType:
			return walkProto(v, off, func(num protowire.Number, typ protowire.Type, v []byte, x uint64, _ int) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					m.normName = string(v)
				case num == 2 && typ == protowire.BytesType:
					m.charsmap = v
				case num == 3 && typ == protowire.VarintType:
					m.addDummyPrefix = x != 0
				case num == 4 && typ == protowire.VarintType:
					m.removeExtraWS = x != 0
				case num == 5 && typ == protowire.VarintType:
					m.escapeWS = x != 0
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func parsePiece(b []byte, base int) (spPiece, error) {
	p := spPiece{typ: pieceNormal}
	err := walkProto(b, base, func(num protowire.Number, typ protowire.Type, v []byte, x uint64, off int) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			if !utf8.Valid(v) {
				return fmt.Errorf("offset %d: piece is not valid UTF-8", off)
			}
			p.piece = string(v)
		case num == 2 && typ == protowire.Fixed32Type:
			p.score = math.Float32frombits(uint32(x))
		case num == 3 && typ == protowire.VarintType:
			p.typ = int(int32(x))
		}
		return nil
	})
	return p, err
}

// walkProto calls f for each field of the message b (base is b's offset in the file, for
// errors): v holds a length-delimited field's bytes (aliasing b), x a varint or fixed
// field's value.
func walkProto(b []byte, base int, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64, off int) error) error {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fmt.Errorf("offset %d: bad field tag: %w", base+i, protowire.ParseError(n))
		}
		off := base + i
		i += n
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b[i:])
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b[i:])
			x = uint64(y)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b[i:])
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b[i:])
		default: // groups (deprecated) and anything else
			n = protowire.ConsumeFieldValue(num, typ, b[i:])
		}
		if n < 0 {
			return fmt.Errorf("offset %d: field %d: %w", off, num, protowire.ParseError(n))
		}
		if err := f(num, typ, v, x, base+i+n-len(v)); err != nil {
			return err
		}
		i += n
	}
	return nil
}
