package feedback

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Loop is one query's recorded loop: its lines, iteration 0 first.
type Loop struct {
	Split, QueryID string
	Lines          []Line
}

// Done reports whether the loop has its last line (a collection killed midway leaves some
// loops unfinished).
func (l Loop) Done() bool { return len(l.Lines) > 0 && l.Lines[len(l.Lines)-1].Stop }

// Instructions returns the loop's instructions q^0, q^1, ..., one per line.
func (l Loop) Instructions() []string {
	out := make([]string, len(l.Lines))
	for i, ln := range l.Lines {
		out[i] = ln.Query
	}
	return out
}

// Read reads the output of a collection (Run) and its record (path + ConfigSuffix): the
// header and each query's loop, in the order of the queries' first lines. Lines are checked
// as a resumed Run checks them (iterations 0, 1, ... in order, nothing after a query's last
// line, each line either refined or stopped) and each line's query must be the previous
// line's refined instruction. A torn last line (a collection killed while writing it) is left
// out; loops may be unfinished (Loop.Done).
func Read(path string) (Header, []Loop, error) {
	var h Header
	hb, err := os.ReadFile(path + ConfigSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil, fmt.Errorf("feedback: %s has no record %s: not the output of train feedback", path, path+ConfigSuffix)
	}
	if err != nil {
		return h, nil, fmt.Errorf("feedback: %w", err)
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		return h, nil, fmt.Errorf("feedback: %s: %w", path+ConfigSuffix, err)
	}
	if h.Format != Format {
		return h, nil, fmt.Errorf("feedback: %s: format %d, this toolret reads %d", path+ConfigSuffix, h.Format, Format)
	}
	f, err := os.Open(path)
	if err != nil {
		return h, nil, fmt.Errorf("feedback: %w", err)
	}
	defer f.Close()
	var loops []Loop
	at := map[ukey]int{}
	_, err = scan(path, f, func(n int, l Line) error {
		k := ukey{l.Split, l.QueryID}
		i, ok := at[k]
		if !ok {
			i = len(loops)
			at[k] = i
			loops = append(loops, Loop{Split: l.Split, QueryID: l.QueryID})
		}
		lp := &loops[i]
		switch prev := len(lp.Lines); {
		case prev > 0 && lp.Lines[prev-1].Stop:
			return fmt.Errorf("feedback: %s:%d: query %q has a line after its last", path, n, l.QueryID)
		case l.Iteration != prev:
			return fmt.Errorf("feedback: %s:%d: query %q iteration %d, want %d", path, n, l.QueryID, l.Iteration, prev)
		case l.Iteration > h.Iterations:
			return fmt.Errorf("feedback: %s:%d: iteration %d beyond the record's %d", path, n, l.Iteration, h.Iterations)
		case !l.Stop && l.Refined == "":
			return fmt.Errorf("feedback: %s:%d: query %q: no refined instruction and no stop", path, n, l.QueryID)
		case prev > 0 && l.Query != lp.Lines[prev-1].Refined:
			return fmt.Errorf("feedback: %s:%d: query %q iteration %d: the instruction is not the previous line's refined one", path, n, l.QueryID, l.Iteration)
		}
		lp.Lines = append(lp.Lines, l)
		return nil
	})
	if err != nil {
		return h, nil, err
	}
	return h, loops, nil
}
