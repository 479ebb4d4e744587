package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
)

// A typed run configuration (Meta.Config) is a struct whose fields are sections (structs) or
// leaves (strings, booleans, integers, floats); each leaf is named by the flag of the command
// that sets it (its flag tag, else its json name, as package internal/flagcfg names it), so
// that a run's configuration, the flags of a format-1 run's Args and the messages of a refused
// resume use one vocabulary. Fields tagged `json:"-"` (the run directory, the backend,
// writers) are not part of it.

// leaf is one leaf field of a typed configuration: name is its flag, key its json name.
type leaf struct {
	name, key string
	v         reflect.Value
}

// leaves returns the leaf fields of the struct v, depth first, in declaration order.
func leaves(v reflect.Value) []leaf {
	var out []leaf
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		key := name
		if fl := f.Tag.Get("flag"); fl != "" && fl != "-" {
			name = fl
		}
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Struct:
			out = append(out, leaves(fv)...)
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			out = append(out, leaf{name, key, fv})
		}
	}
	return out
}

// structOf returns the struct cfg is or points to.
func structOf(cfg any) (reflect.Value, error) {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("run configuration: %T is not a struct", cfg)
	}
	return v, nil
}

// format writes a leaf's value as its flag prints it (flag.Value.String).
func format(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return strconv.FormatInt(v.Int(), 10)
}

// ConfigArgs flattens the typed configuration cfg into its flags: leaf json name -> value as
// the flag prints it.
func ConfigArgs(cfg any) map[string]string {
	v, err := structOf(cfg)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, l := range leaves(v) {
		out[l.name] = format(l.v)
	}
	return out
}

// ConfigFromArgs sets the leaves of the typed configuration *cfg named in args (a format-1
// run's flags, Meta.Args), parsed as their field's type; a leaf whose flag was renamed is
// found under its json name too (-retriever, now -first-stage). Args naming no leaf
// (operational flags such as -run, flags of other kinds) are ignored, leaves args lacks keep
// their value.
func ConfigFromArgs(cfg any, args map[string]string) error {
	if v := reflect.ValueOf(cfg); v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("run configuration: %T is not a pointer", cfg)
	}
	v, err := structOf(cfg)
	if err != nil {
		return err
	}
	for _, l := range leaves(v) {
		s, ok := args[l.name]
		if !ok {
			if s, ok = args[l.key]; !ok {
				continue
			}
		}
		if err := set(l.v, s); err != nil {
			return fmt.Errorf("recorded -%s %q: %w", l.name, s, err)
		}
	}
	return nil
}

func set(v reflect.Value, s string) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return err
		}
		v.SetUint(u)
	default:
		i, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return err
		}
		v.SetInt(i)
	}
	return nil
}

// ConfigDiff lists, in declaration order, the leaves whose values differ between the typed
// configurations given and recorded (of one type), as "name GIVEN != recorded RECORDED";
// leaves named in ignore are not compared.
func ConfigDiff(recorded, given any, ignore ...string) []string {
	rv, err1 := structOf(recorded)
	gv, err2 := structOf(given)
	if err1 != nil || err2 != nil || rv.Type() != gv.Type() {
		return []string{fmt.Sprintf("configuration %T != recorded %T", given, recorded)}
	}
	skip := map[string]bool{}
	for _, n := range ignore {
		skip[n] = true
	}
	rl, gl := leaves(rv), leaves(gv)
	var out []string
	for i, g := range gl {
		r := rl[i]
		if skip[g.name] || format(g.v) == format(r.v) {
			continue
		}
		if g.v.Kind() == reflect.String {
			out = append(out, fmt.Sprintf("%s %q != recorded %q", g.name, g.v.String(), r.v.String()))
		} else {
			out = append(out, fmt.Sprintf("%s %s != recorded %s", g.name, format(g.v), format(r.v)))
		}
	}
	return out
}

// ConfigDiffError formats ConfigDiff as one error for resuming the run at dir, or returns nil
// when there are none.
func ConfigDiffError(dir string, diffs []string) error {
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("resume %s: refused, the configuration differs from the run's: %s", dir, strings.Join(diffs, ", "))
}

// SetConfig records the typed configuration cfg in m.Config.
func (m *Meta) SetConfig(cfg any) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("run configuration: %w", err)
	}
	m.Config = b
	return nil
}

// DecodeConfig reads the run's typed configuration into *cfg: Config when the run has one,
// else (a format-1 run, or a kind without a typed configuration when the run was made) its
// Args through migrate, which fills *cfg from the flag values. It reports whether Config was
// present.
func (m *Meta) DecodeConfig(cfg any, migrate func(args map[string]string) error) (typed bool, err error) {
	if len(m.Config) > 0 {
		if err := json.Unmarshal(m.Config, cfg); err != nil {
			return true, fmt.Errorf("%s config: %w", MetaFile, err)
		}
		return true, nil
	}
	if err := migrate(m.Args); err != nil {
		return false, fmt.Errorf("%s args (format %d): %w", MetaFile, m.Format, err)
	}
	return false, nil
}

// Record fills the run description m of a new run with the typed configuration cfg (Config)
// and the flags args (the command line's; nil for a Go caller), its values overridden by the
// configuration's (ConfigArgs): a Go caller's run records its configuration's flags.
func (m *Meta) Record(cfg any, args map[string]string) error {
	if err := m.SetConfig(cfg); err != nil {
		return err
	}
	m.Args = maps.Clone(args)
	if m.Args == nil {
		m.Args = map[string]string{}
	}
	maps.Copy(m.Args, ConfigArgs(cfg))
	return nil
}

// CopyConfig sets the leaves of the typed configuration *dst to those of src (of one type),
// but for the leaves keep names, e.g. the flags given on a command line resuming a run, which
// the recorded configuration src then fills around.
func CopyConfig(dst, src any, keep func(name string) bool) error {
	if v := reflect.ValueOf(dst); v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("run configuration: %T is not a pointer", dst)
	}
	dv, err1 := structOf(dst)
	sv, err2 := structOf(src)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if dv.Type() != sv.Type() {
		return fmt.Errorf("run configuration: %T, recorded %T", dst, src)
	}
	sl := leaves(sv)
	for i, l := range leaves(dv) {
		if !keep(l.name) {
			l.v.Set(sl[i].v)
		}
	}
	return nil
}
