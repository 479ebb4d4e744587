// Package jsonfile reads and writes the JSON files toolret keeps (run state, model
// configurations, reports, an index's tools.jsonl): one reader whose errors name the file and
// the line and column at fault, and one durable writer, for a JSON document (Write) or JSON
// Lines (WriteLines) (package atomicfile: a reader, or a process restarted after a crash, sees
// the old file or the new one, never part of it).
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolret/toolret/internal/atomicfile"
)

// Write writes v as indented JSON, ending in a newline, to path atomically (temporary file,
// fsync, rename, directory fsync), creating the directory if needed. Errors name path.
func Write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// WriteLines writes vs as JSON Lines to path atomically, as Write does: each value compact on
// its own line, with <, > and & written as they are (no HTML escaping). When a value cannot be
// encoded, path is left as it was. Errors name path.
func WriteLines[T any](path string, vs []T) error {
	return atomicfile.WriteFunc(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for i, v := range vs {
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("line %d: %w", i+1, err)
			}
		}
		return nil
	})
}

// Read decodes the JSON file at path into v, which may hold defaults for the fields the file
// omits. A file that cannot be read returns the os error (it names path, and errors.Is
// fs.ErrNotExist holds for a missing one); a decoding error names path and, where the decoder
// says where, the line and column: "run/config.json:3:14: ...".
func Read(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return Decode(path, b, v)
}

// Load is Read into a new T: the zero value, or def's copy where def is given.
func Load[T any](path string, def ...T) (T, error) {
	var v T
	if len(def) > 0 {
		v = def[0]
	}
	err := Read(path, &v)
	return v, err
}

// Decode decodes b, the content of the file path, into v; errors are Read's.
func Decode(path string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", Position(path, b, err), err)
	}
	return nil
}

// Position returns path, followed by ":line:column" when err (from decoding b) tells the
// byte offset at fault (Offset).
func Position(path string, b []byte, err error) string {
	off := Offset(err)
	if off < 0 {
		return path
	}
	line, col := LineColumn(b, off)
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}

// Offset returns the byte offset, in the input, of encoding/json's syntax or type error
// err, or -1 when err is neither.
func Offset(err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return -1
}

// LineColumn returns the line and column (from 1) in b of the byte at offset off, as the
// decoder counts it: the bytes read, the offending one included (an off past b is b's end).
func LineColumn(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	col = max(1, int(off)-1-bytes.LastIndexByte(b[:off], '\n'))
	return line, col
}
