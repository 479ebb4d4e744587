package rerank

import (
	"fmt"
	"strconv"
	"strings"
)

// MarshalText writes o as UnmarshalText reads it: the merge rule, then the fields that are
// not zero as key=value ("mix,whole=0.6", "max,norm=minmax,depth=50"); a zero Merge (the
// default rule) is written "on".
func (o ClauseOptions) MarshalText() ([]byte, error) {
	merge := string(o.Merge)
	if merge == "" {
		merge = "on"
	}
	parts := []string{merge}
	if o.Norm != "" {
		parts = append(parts, "norm="+string(o.Norm))
	}
	if o.Whole != 0 {
		parts = append(parts, "whole="+strconv.FormatFloat(o.Whole, 'g', -1, 64))
	}
	if o.MinWords != 0 {
		parts = append(parts, "min-words="+strconv.Itoa(o.MinWords))
	}
	if o.Depth != 0 {
		parts = append(parts, "depth="+strconv.Itoa(o.Depth))
	}
	return []byte(strings.Join(parts, ",")), nil
}

// UnmarshalText reads clause options as the commands' -clauses takes them: a merge rule (max,
// mix or rrf; "on" for the default, max), then optional comma-separated key=value fields
// norm (zscore, minmax, off), whole, min-words and depth, e.g. "mix,whole=0.6". The options
// are checked (Check); an error names the part that is wrong.
func (o *ClauseOptions) UnmarshalText(b []byte) error {
	parts := strings.Split(strings.TrimSpace(string(b)), ",")
	var c ClauseOptions
	switch m := strings.TrimSpace(parts[0]); m {
	case "on", "":
	case string(MergeMax), string(MergeMix), string(MergeRRF):
		c.Merge = Merge(m)
	default:
		return fmt.Errorf("clauses %q: want a merge rule first: max, mix, rrf (or on)", b)
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return fmt.Errorf("clauses %q: %q: want key=value (norm, whole, min-words, depth)", b, p)
		}
		var err error
		switch k {
		case "norm":
			c.Norm = Norm(v)
		case "whole":
			c.Whole, err = strconv.ParseFloat(v, 64)
		case "min-words":
			c.MinWords, err = strconv.Atoi(v)
		case "depth":
			c.Depth, err = strconv.Atoi(v)
		default:
			return fmt.Errorf("clauses %q: unknown key %q (norm, whole, min-words, depth)", b, k)
		}
		if err != nil {
			return fmt.Errorf("clauses %q: %s: %w", b, k, err)
		}
	}
	if err := c.Check(); err != nil {
		return err
	}
	*o = c
	return nil
}
