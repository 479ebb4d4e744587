package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// node is a JSON value that keeps the order of object keys, so a schema's properties keep
// the order their source lists them in (the order a tool's retrieval text names them).
type node struct {
	kind byte            // 'o' object, 'a' array, 's' scalar (string, number, bool, null)
	obj  []member        // kind 'o'
	arr  []*node         // kind 'a'
	raw  json.RawMessage // kind 's'
}

type member struct {
	key string
	val *node
}

func parseNode(b []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the value")
	}
	return n, nil
}

func decodeNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		n := &node{kind: 'o'}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.set(k, v)
		}
		_, err := dec.Token()
		return n, err
	case json.Delim('['):
		n := &node{kind: 'a', arr: []*node{}}
		for dec.More() {
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.arr = append(n.arr, v)
		}
		_, err := dec.Token()
		return n, err
	}
	raw, err := json.Marshal(tok)
	if err != nil {
		return nil, err
	}
	return &node{kind: 's', raw: raw}, nil
}

func scalar(v any) *node {
	b, _ := json.Marshal(v)
	return &node{kind: 's', raw: b}
}

func object(members ...member) *node { return &node{kind: 'o', obj: members} }

// get returns the value of key in object n, nil when n is not an object or has no key.
func (n *node) get(key string) *node {
	if n == nil || n.kind != 'o' {
		return nil
	}
	for _, m := range n.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// set sets key in object n, in place when present (a later duplicate key wins, as in
// encoding/json), else appended.
func (n *node) set(key string, v *node) {
	for i := range n.obj {
		if n.obj[i].key == key {
			n.obj[i].val = v
			return
		}
	}
	n.obj = append(n.obj, member{key, v})
}

func (n *node) del(key string) {
	for i := range n.obj {
		if n.obj[i].key == key {
			n.obj = append(n.obj[:i], n.obj[i+1:]...)
			return
		}
	}
}

// str returns n's value when it is a JSON string.
func (n *node) str() (string, bool) {
	if n == nil || n.kind != 's' || len(n.raw) == 0 || n.raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(n.raw, &s) == nil
}

// encode writes n compactly, without HTML escaping.
func (n *node) encode() json.RawMessage {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, m := range n.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(quote(m.key))
			b.WriteByte(':')
			m.val.write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	default:
		if s, ok := n.str(); ok {
			b.Write(quote(s))
		} else {
			b.Write(n.raw)
		}
	}
}

func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // cannot fail for a string
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// compactJSON returns raw compacted, without HTML escaping, as library.Write writes it, so an
// imported tool equals the one read back.
func compactJSON(raw []byte) (json.RawMessage, error) {
	n, err := parseNode(raw)
	if err != nil {
		return nil, err
	}
	return n.encode(), nil
}
