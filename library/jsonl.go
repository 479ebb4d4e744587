package library

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolret/toolret/internal/atomicfile"
)

// FormatVersion is the version of the library file format Write writes and Read accepts.
const FormatVersion = 1

// header is a library file's optional first line.
type header struct {
	Version  int    `json:"toolret_library"`
	Template string `json:"template,omitempty"`
}

// Read reads the library file at path (Decode); errors name the file and line.
func Read(path string) (*Library, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("library %w", err)
	}
	defer f.Close()
	return Decode(f, path)
}

// Decode reads a library in JSON Lines from r: an optional header line
// {"toolret_library": 1, "template": "..."}, then one Tool object per line; blank lines are
// skipped. Unknown fields are errors. The library is checked (Library.Check). Errors name
// name and the line.
func Decode(r io.Reader, name string) (*Library, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	l := &Library{}
	at := map[string]int{} // tool ID -> line
	first := true
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, n, rerr)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if err := l.decodeLine(line, first, at, n); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			first = false
		}
		if rerr != nil {
			break
		}
	}
	if _, err := ParseTemplate(l.Template); err != nil {
		return nil, fmt.Errorf("%s:1: %w", name, err)
	}
	return l, nil
}

func (l *Library) decodeLine(line []byte, first bool, at map[string]int, n int) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if _, ok := probe["toolret_library"]; ok {
		if !first {
			return errors.New(`the "toolret_library" header must be the first line`)
		}
		var h header
		if err := strictUnmarshal(line, &h); err != nil {
			return fmt.Errorf("header: %w", err)
		}
		if h.Version != FormatVersion {
			return fmt.Errorf("library format version %d: this toolret reads version %d", h.Version, FormatVersion)
		}
		l.Template = h.Template
		return nil
	}
	var t Tool
	if err := strictUnmarshal(line, &t); err != nil {
		return err
	}
	if err := t.Check(); err != nil {
		return err
	}
	if prev, ok := at[t.ID()]; ok {
		return fmt.Errorf("duplicate tool %q (first at line %d)", t.ID(), prev)
	}
	at[t.ID()] = n
	l.Tools = append(l.Tools, t)
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// Encode writes l to w as JSON Lines: the header, then one tool per line.
func Encode(w io.Writer, l *Library) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(header{Version: FormatVersion, Template: l.Template}); err != nil {
		return err
	}
	for _, t := range l.Tools {
		if err := enc.Encode(t); err != nil {
			return fmt.Errorf("tool %q: %w", t.ID(), err)
		}
	}
	return nil
}

// Write checks l (Library.Check) and writes it to path atomically (a reader sees the old
// file or the new one, never part).
func Write(path string, l *Library) error {
	if err := l.Check(); err != nil {
		return fmt.Errorf("library %s: %w", path, err)
	}
	var b bytes.Buffer
	if err := Encode(&b, l); err != nil {
		return fmt.Errorf("library %s: %w", path, err)
	}
	return atomicfile.Write(path, b.Bytes())
}
