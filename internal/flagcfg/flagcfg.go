// Package flagcfg declares a command's flags from a configuration struct: each setting is
// one field, whose tags give its flag name and help, and whose value in the struct passed
// (filled by the package's Default*Config) is the flag's default. A parsed flag writes the
// field. Markdown renders the flags of a flag set as a reference table, so that -h, the docs
// and the defaults come from the same declaration.
//
// The tags of a field:
//
//	json:"name"     the flag's name (the run.json name of a recorded configuration);
//	                json:"-" skips the field unless flag gives a name
//	flag:"name"     the flag's name when it is not the json name; flag:"-" skips the field
//	help:"text"     the flag's help text (flag.PrintDefaults: a `backquoted` word names the value)
//	env:"NAME"      the environment variable that, when set and not empty, replaces the default
//
// A field with neither tag is named after the Go field in kebab case (MaxBatch: max-batch).
// A struct field (a section of the configuration, its json name the section's name in
// run.json) is flattened: its fields are flags of their own. The field types are string, bool, int, int64, uint, uint64,
// float64, time.Duration and types of those kinds, []string (a comma-separated list), a
// pointer to one of those (nil until the flag is given: "auto"), and any type whose pointer
// is a flag.Value or an encoding.TextUnmarshaler and TextMarshaler. Another type is an error
// unless the field is skipped.
package flagcfg

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Field is one flag a configuration declares.
type Field struct {
	Name string // the flag's name, without the dash
	Path string // the Go field path, e.g. "Training.LR"
	Help string
	Env  string // the environment variable of the default ("": none)
	v    reflect.Value
}

// Value returns the field's current value (before parsing: the default).
func (f Field) Value() any { return f.v.Interface() }

// Fields returns the flags the struct cfg points to declares, in field order.
func Fields(cfg any) ([]Field, error) {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("flagcfg: %T is not a pointer to a struct", cfg)
	}
	var out []Field
	if err := fields(v.Elem(), "", &out); err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, f := range out {
		if p, ok := seen[f.Name]; ok {
			return nil, fmt.Errorf("flagcfg: %s and %s are both flag -%s", p, f.Path, f.Name)
		}
		seen[f.Name] = f.Path
	}
	return out, nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	valueType    = reflect.TypeFor[flag.Value]()
	textUnType   = reflect.TypeFor[encoding.TextUnmarshaler]()
	textMaType   = reflect.TypeFor[encoding.TextMarshaler]()
)

func fields(s reflect.Value, prefix string, out *[]Field) error {
	t := s.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, skip := flagName(sf)
		if skip {
			continue
		}
		v := s.Field(i)
		path := prefix + sf.Name
		if v.Kind() == reflect.Struct && !custom(v.Type()) {
			if err := fields(v, path+".", out); err != nil {
				return err
			}
			continue
		}
		if !supported(v.Type()) {
			return fmt.Errorf("flagcfg: %s (-%s): type %s has no flag (tag it flag:\"-\")", path, name, v.Type())
		}
		*out = append(*out, Field{Name: name, Path: path, Help: sf.Tag.Get("help"), Env: sf.Tag.Get("env"), v: v})
	}
	return nil
}

// flagName returns the flag name of sf; skip reports a field tagged out.
func flagName(sf reflect.StructField) (name string, skip bool) {
	if f, ok := sf.Tag.Lookup("flag"); ok {
		if f == "-" {
			return "", true
		}
		if f != "" {
			return f, false
		}
	}
	if j, ok := sf.Tag.Lookup("json"); ok {
		j, _, _ = strings.Cut(j, ",")
		if j == "-" {
			return "", true
		}
		if j != "" {
			return j, false
		}
	}
	return kebab(sf.Name), false
}

// kebab returns a Go name in kebab case: MaxInFlight is max-in-flight, LLMModel llm-model.
func kebab(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) {
			if i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1])) {
				b.WriteByte('-')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// custom reports whether t parses itself (flag.Value, or text marshalling both ways).
func custom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(valueType) || p.Implements(textUnType) && p.Implements(textMaType)
}

func supported(t reflect.Type) bool {
	if custom(t) || t == durationType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	case reflect.Pointer:
		e := t.Elem()
		return e.Kind() != reflect.Pointer && e.Kind() != reflect.Slice && supported(e)
	}
	return false
}

// Bind registers on fs one flag for each field of the struct cfg points to (Fields), with
// the field's current value as its default, and returns the fields. A flag already defined on
// fs is an error, not a panic.
func Bind(fs *flag.FlagSet, cfg any) ([]Field, error) {
	fl, err := Fields(cfg)
	if err != nil {
		return nil, err
	}
	for _, f := range fl {
		if fs.Lookup(f.Name) != nil {
			return nil, fmt.Errorf("flagcfg: %s: flag -%s is already defined", f.Path, f.Name)
		}
	}
	for _, f := range fl {
		bind(fs, f)
		if f.Env == "" {
			continue
		}
		if e := os.Getenv(f.Env); e != "" {
			ff := fs.Lookup(f.Name)
			if err := ff.Value.Set(e); err != nil {
				return nil, fmt.Errorf("$%s (the default of -%s) %q: %w", f.Env, f.Name, e, err)
			}
			ff.DefValue = ff.Value.String()
		}
	}
	return fl, nil
}

// bind registers f through the flag package's own typed flags where there is one, so that
// -h shows the usual type names and defaults.
func bind(fs *flag.FlagSet, f Field) {
	v, name, help := f.v, f.Name, f.Help
	p := v.Addr()
	if custom(v.Type()) {
		if fv, ok := p.Interface().(flag.Value); ok {
			fs.Var(fv, name, help)
			return
		}
		var m encoding.TextMarshaler
		if mm, ok := v.Interface().(encoding.TextMarshaler); ok {
			m = mm
		} else {
			m = reflect.New(v.Type()).Interface().(encoding.TextMarshaler)
			reflect.ValueOf(m).Elem().Set(v)
		}
		fs.TextVar(p.Interface().(encoding.TextUnmarshaler), name, m, help)
		return
	}
	if v.Type() == durationType {
		fs.DurationVar(p.Interface().(*time.Duration), name, time.Duration(v.Int()), help)
		return
	}
	switch v.Kind() {
	case reflect.String:
		fs.StringVar(p.Convert(reflect.TypeFor[*string]()).Interface().(*string), name, v.String(), help)
	case reflect.Bool:
		fs.BoolVar(p.Convert(reflect.TypeFor[*bool]()).Interface().(*bool), name, v.Bool(), help)
	case reflect.Int:
		fs.IntVar(p.Convert(reflect.TypeFor[*int]()).Interface().(*int), name, int(v.Int()), help)
	case reflect.Int64:
		fs.Int64Var(p.Convert(reflect.TypeFor[*int64]()).Interface().(*int64), name, v.Int(), help)
	case reflect.Uint:
		fs.UintVar(p.Convert(reflect.TypeFor[*uint]()).Interface().(*uint), name, uint(v.Uint()), help)
	case reflect.Uint64:
		fs.Uint64Var(p.Convert(reflect.TypeFor[*uint64]()).Interface().(*uint64), name, v.Uint(), help)
	case reflect.Float64:
		fs.Float64Var(p.Convert(reflect.TypeFor[*float64]()).Interface().(*float64), name, v.Float(), help)
	case reflect.Slice:
		fs.Var(&listValue{v}, name, help)
	case reflect.Pointer:
		fs.Var(&optValue{v}, name, help)
	}
}

// listValue is a []string flag: a comma-separated list, each item trimmed, empty items
// dropped.
type listValue struct{ v reflect.Value }

func (l *listValue) String() string {
	if l == nil || !l.v.IsValid() {
		return ""
	}
	s := make([]string, l.v.Len())
	for i := range s {
		s[i] = l.v.Index(i).String()
	}
	return strings.Join(s, ",")
}

func (l *listValue) Set(s string) error {
	var items []string
	for it := range strings.SplitSeq(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	out := reflect.MakeSlice(l.v.Type(), len(items), len(items))
	for i, it := range items {
		out.Index(i).SetString(it)
	}
	l.v.Set(out)
	return nil
}

// optValue is a pointer flag: nil until given (the field's "auto"), then the value parsed.
type optValue struct{ v reflect.Value }

func (o *optValue) String() string {
	if o == nil || !o.v.IsValid() || o.v.IsNil() {
		return ""
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	bind(fs, Field{Name: "x", v: o.v.Elem()})
	return fs.Lookup("x").Value.String()
}

func (o *optValue) Set(s string) error {
	n := reflect.New(o.v.Type().Elem())
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	bind(fs, Field{Name: "x", v: n.Elem()})
	if err := fs.Lookup("x").Value.Set(s); err != nil {
		return err
	}
	o.v.Set(n)
	return nil
}

func (o *optValue) IsBoolFlag() bool {
	return o != nil && o.v.IsValid() && o.v.Type().Elem().Kind() == reflect.Bool
}

// Markdown returns the flags of fs as a markdown table, by name: the flag with its value's
// type, its default and its help.
func Markdown(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		typ, help := flag.UnquoteUsage(f)
		name := "`-" + f.Name
		if typ != "" {
			name += " " + typ
		}
		name += "`"
		def := ""
		if !zeroDefault(f) {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, cell(help))
	})
	return b.String()
}

// zeroDefault reports whether f's default is its type's zero value, which -h does not print.
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	if v, err := strconv.ParseFloat(f.DefValue, 64); err == nil && v == 0 {
		return true
	}
	return false
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// Section markers of a generated part of a markdown page.
const (
	beginMark = "<!-- BEGIN GENERATED: %s (go test -update; do not edit) -->\n"
	endMark   = "<!-- END GENERATED: %s -->\n"
)

// ErrNoSection is returned by ReplaceSection when the page lacks the section's markers.
var ErrNoSection = errors.New("no generated section")

// ReplaceSection returns page with the text between the markers of the generated section
// name replaced by body.
func ReplaceSection(page []byte, name, body string) ([]byte, error) {
	begin, end := fmt.Sprintf(beginMark, name), fmt.Sprintf(endMark, name)
	s := string(page)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%w %q: want the lines %q and %q", ErrNoSection, name, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	return []byte(s[:i+len(begin)] + body + s[j:]), nil
}

// Section returns the markers of the generated section name around body, to paste into a
// page once.
func Section(name, body string) string {
	return fmt.Sprintf(beginMark, name) + body + fmt.Sprintf(endMark, name)
}

// CheckDoc compares the generated section name of the markdown page at path with the flag
// reference of fs (Markdown). With update, a section that differs is rewritten; without, it
// is an error that says how to rewrite it.
func CheckDoc(path, name string, fs *flag.FlagSet, update bool) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("flag reference: %w", err)
	}
	want, err := ReplaceSection(page, name, Markdown(fs))
	if err != nil {
		return fmt.Errorf("flag reference in %s: %w", path, err)
	}
	if string(want) == string(page) {
		return nil
	}
	if !update {
		return fmt.Errorf("the flags of %s differ from their reference in %s: rewrite it with go test -run TestFlagReference -update", name, path)
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		return fmt.Errorf("flag reference: %w", err)
	}
	return nil
}
