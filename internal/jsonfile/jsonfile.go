// Package jsonfile reads and writes the JSON files toolret keeps (run state, model
// configurations, reports): one reader whose errors name the file and the line and column at
// fault, and one durable writer (package atomicfile: a reader, or a process restarted after a
// crash, sees the old file or the new one, never part of it).
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
// byte offset at fault.
func Position(path string, b []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return path
	}
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}
