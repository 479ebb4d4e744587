package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// apiError is an error answered to the client: its status and a message saying what is
// wrong.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// readJSON reads r's body (at most limit bytes) into v: valid UTF-8, one JSON object, no
// unknown fields.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) *apiError {
	body := http.MaxBytesReader(w, r.Body, limit)
	b, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, "request body is larger than the limit of %d bytes (-max-body)", limit)
		}
		return errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	return decodeJSON(b, v)
}

// DecodeJSON decodes b, one JSON object, into v (no unknown fields), with an error that
// names what is wrong as the REST API's do (the offset, the field and the type it wants),
// for arguments that reach a handler other than as a request body (an MCP tool's).
func DecodeJSON(b []byte, v any) error {
	if err := decodeJSON(b, v); err != nil {
		return err
	}
	return nil
}

// decodeJSON decodes b, one JSON object, into v, naming what is wrong.
func decodeJSON(b []byte, v any) *apiError {
	if len(bytes.TrimSpace(b)) == 0 {
		return errorf(http.StatusBadRequest, "request body is empty; want a JSON object")
	}
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return errorf(http.StatusBadRequest, "request body is not valid UTF-8 (invalid byte 0x%02x at offset %d)", b[i], i)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, v)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, "malformed JSON: data after the request object (at offset %d)", dec.InputOffset())
	}
	return nil
}

// jsonError turns a decoding error into a message naming the offset, field or type.
func jsonError(err error, v any) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errorf(http.StatusBadRequest, "malformed JSON at offset %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "malformed JSON: the request object is cut short")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errorf(http.StatusBadRequest, "request body is a JSON %s, want an object", typ.Value)
		}
		return errorf(http.StatusBadRequest, "field %q is a JSON %s, want %s", typ.Field, typ.Value, kindName(typ.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return errorf(http.StatusBadRequest, "unknown field %s (known fields: %s)", f, fieldNames(reflect.TypeOf(v)))
	}
	return errorf(http.StatusBadRequest, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(kindName(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// fieldNames describes the JSON fields of a request type: "a, b[]{c, d}, e{f}".
func fieldNames(t reflect.Type) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			name += "[]"
		}
		if sub := fieldNames(ft); sub != "" {
			name += "{" + sub + "}"
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}
