package feedback

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/rank"
)

// ConfigSuffix is appended to the output path to name the file that records a collection's
// Header.
const ConfigSuffix = ".config.json"

// Format is the version of the output this package writes.
const Format = 1

// Header records what made an output file: a resumed run must have the same header, Info
// aside.
type Header struct {
	Format      int      `json:"format"`
	Dataset     string   `json:"dataset"`
	Fingerprint string   `json:"data_fingerprint"`
	Splits      []string `json:"splits"`
	K           int      `json:"k"`
	Iterations  int      `json:"iterations"`
	// Settings are the other settings that shape the output (refiner, retriever run, model).
	Settings map[string]string `json:"settings,omitempty"`
	// Prompts are the refiner's prompts by file name, as used.
	Prompts map[string]string `json:"prompts,omitempty"`
	// Info is recorded and not compared (a server's URL, ...).
	Info map[string]string `json:"info,omitempty"`
}

// Config is a collection.
type Config struct {
	Data *data.Dataset
	// Ranker retrieves the tools of an instruction. Each instruction is ranked alone, so its
	// ranking does not depend on what it would be batched with.
	Ranker   rank.Ranker
	Rewriter Rewriter
	// Splits are the splits whose judged queries are collected, in this order.
	Splits []string
	// K is the number of tools retrieved per instruction; Iterations the most refinements T.
	K, Iterations int
	// Out is the JSONL output; Out + ConfigSuffix records the header.
	Out string
	// Settings, Prompts and Info go into the header (see Header).
	Settings, Prompts, Info map[string]string
	// Concurrency is the number of queries refined at once (default 1); give the LLM client's
	// limit.
	Concurrency int
	// Chunk is the number of queries whose lines are written together, in query order, after
	// all of them finished (default 8·Concurrency). A killed run loses at most one chunk's
	// work (whose replies a cache keeps).
	Chunk int
	// Progress, when set, is called after each chunk with the queries done (finished before
	// this run included) and the total.
	Progress func(done, total int)
}

// Summary describes a collection's output file when Run returns.
type Summary struct {
	// Queries is the number of queries collected; Resumed those finished before this run.
	Queries, Resumed int
	// Lines is the number of lines of the file; Written those this run appended.
	Lines, Written int
	// Reasons counts the queries by the reason their loop stopped (Reason* constants).
	Reasons map[string]int
	// Refinements is the number of refined instructions in the file.
	Refinements int
	// Steps is the number of refiner calls of this run.
	Steps int
}

type unit struct {
	split string
	q     int // index into Data.Queries
}

type ukey struct{ split, id string }

// Run collects the feedback loop of every judged query of cfg.Splits into cfg.Out, resuming
// a file an earlier run with the same header left (see the package doc). A malformed reply is
// recorded in its line and counted; an error of the retriever or the refiner stops the run,
// after which it can be resumed.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if err := cfg.check(); err != nil {
		return Summary{}, err
	}
	d := cfg.Data
	var units []unit
	known := map[ukey]*prior{}
	for i, name := range cfg.Splits {
		if slices.Contains(cfg.Splits[:i], name) {
			return Summary{}, fmt.Errorf("feedback: split %q given twice", name)
		}
		s, err := d.Split(name)
		if err != nil {
			return Summary{}, fmt.Errorf("feedback: %w", err)
		}
		for _, q := range s.Judged() {
			units = append(units, unit{name, q})
			known[ukey{name, d.Queries[q].ID}] = &prior{}
		}
	}
	h := Header{Format: Format, Dataset: d.Name, Fingerprint: d.Fingerprint(), Splits: cfg.Splits, K: cfg.K, Iterations: cfg.Iterations,
		Settings: cfg.Settings, Prompts: cfg.Prompts, Info: cfg.Info}
	sum := Summary{Queries: len(units), Reasons: map[string]int{}}
	if err := resume(cfg.Out, h, known, &sum); err != nil {
		return Summary{}, err
	}
	var todo []unit
	for _, u := range units {
		if known[ukey{u.split, d.Queries[u.q].ID}].last.Stop {
			sum.Resumed++
			continue
		}
		todo = append(todo, u)
	}
	done := sum.Resumed
	var mu sync.Mutex
	tick := func() {
		if cfg.Progress != nil {
			mu.Lock()
			done++
			cfg.Progress(done, len(units))
			mu.Unlock()
		}
	}
	if cfg.Progress != nil {
		cfg.Progress(done, len(units))
	}
	f, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return sum, fmt.Errorf("feedback: %w", err)
	}
	defer f.Close()
	tools := Tools(d)
	for lo := 0; lo < len(todo); lo += cfg.Chunk {
		chunk := todo[lo:min(lo+cfg.Chunk, len(todo))]
		lines, err := cfg.chunk(ctx, chunk, known, tools, tick)
		if err != nil {
			return sum, err
		}
		var buf bytes.Buffer
		for _, ls := range lines {
			for _, l := range ls {
				b, err := json.Marshal(l)
				if err != nil {
					return sum, fmt.Errorf("feedback: %w", err)
				}
				buf.Write(b)
				buf.WriteByte('\n')
				sum.count(l)
				sum.Written++
				if l.Reason != ReasonIterations {
					sum.Steps++
				}
			}
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			return sum, fmt.Errorf("feedback: %w", err)
		}
		if err := f.Sync(); err != nil {
			return sum, fmt.Errorf("feedback: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return sum, fmt.Errorf("feedback: %w", err)
	}
	return sum, nil
}

// prior is what the existing lines say about a query: how many there are, and the last.
type prior struct {
	n    int
	last Line
}

func (s *Summary) count(l Line) {
	s.Lines++
	if l.Stop {
		s.Reasons[l.Reason]++
	}
	if l.Refined != "" {
		s.Refinements++
	}
}

func (c *Config) check() error {
	switch {
	case c.Data == nil:
		return errors.New("feedback: no dataset")
	case c.Ranker == nil:
		return errors.New("feedback: no retriever")
	case c.Rewriter == nil:
		return errors.New("feedback: no refiner")
	case c.K < 1:
		return fmt.Errorf("feedback: k %d: must be > 0", c.K)
	case c.Iterations < 1:
		return fmt.Errorf("feedback: iterations %d: must be > 0", c.Iterations)
	case c.Out == "":
		return errors.New("feedback: no output file")
	case len(c.Splits) == 0:
		return errors.New("feedback: no split")
	}
	if c.Concurrency < 1 {
		c.Concurrency = 1
	}
	if c.Chunk < 1 {
		c.Chunk = 8 * c.Concurrency
	}
	return nil
}

// resume checks an existing output against h (refusing another collection's file), reads its
// lines into known (checking each: a query of the collection, iterations 0, 1, ... in order,
// nothing after a query's last line) and sum, cuts a torn last line, and records h beside
// the output.
func resume(out string, h Header, known map[ukey]*prior, sum *Summary) error {
	cfgPath := out + ConfigSuffix
	f, err := os.OpenFile(out, os.O_RDWR, 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("feedback: %w", err)
	}
	var size int64
	if f != nil {
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("feedback: %w", err)
		}
		size = st.Size()
	}
	if size > 0 {
		hb, err := os.ReadFile(cfgPath)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("feedback: %s exists but %s does not: not a collection's output, or its record was removed; use another -out", out, cfgPath)
		}
		if err != nil {
			return fmt.Errorf("feedback: %w", err)
		}
		var old Header
		if err := json.Unmarshal(hb, &old); err != nil {
			return fmt.Errorf("feedback: %s: %w", cfgPath, err)
		}
		if diffs := old.diff(h); len(diffs) > 0 {
			return fmt.Errorf("feedback: %s was collected with other settings (resume with the same ones, or use another -out):\n  %s", out, strings.Join(diffs, "\n  "))
		}
		good, err := scan(out, f, func(n int, l Line) error {
			if err := checkLine(out, n, l, known, h.Iterations); err != nil {
				return err
			}
			sum.count(l)
			return nil
		})
		if err != nil {
			return err
		}
		if good < size {
			if err := f.Truncate(good); err != nil {
				return fmt.Errorf("feedback: cutting the torn last line of %s: %w", out, err)
			}
			if err := f.Sync(); err != nil {
				return fmt.Errorf("feedback: %w", err)
			}
		}
	}
	if err := jsonfile.Write(cfgPath, h); err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	return nil
}

// scan reads the lines of an output, calling fn with each line's number and content, and
// returns the length of the part that holds them: a last line without its newline, or one
// that does not parse, is torn (a run killed while writing it) and left out; any other
// unreadable line is an error naming it.
func scan(name string, r io.Reader, fn func(n int, l Line) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var pos int64
	var bad error // an unreadable line: fatal unless it is the last
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && bad != nil {
			return 0, bad
		}
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return 0, fmt.Errorf("feedback: %s: %w", name, err)
		}
		var l Line
		err = json.Unmarshal(b[:len(b)-1], &l)
		if err == nil && l.QueryID == "" {
			err = errors.New("no query_id")
		}
		if err != nil {
			bad = fmt.Errorf("feedback: %s:%d: %w", name, n, err)
			continue
		}
		if err := fn(n, l); err != nil {
			return 0, err
		}
		pos += int64(len(b))
	}
}

// checkLine checks line n of an existing output and records it in known.
func checkLine(name string, n int, l Line, known map[ukey]*prior, iterations int) error {
	p := known[ukey{l.Split, l.QueryID}]
	switch {
	case p == nil:
		return fmt.Errorf("feedback: %s:%d: query %q of split %q is not in this collection", name, n, l.QueryID, l.Split)
	case p.n > 0 && p.last.Stop:
		return fmt.Errorf("feedback: %s:%d: query %q has a line after its last", name, n, l.QueryID)
	case l.Iteration != p.n:
		return fmt.Errorf("feedback: %s:%d: query %q iteration %d, want %d", name, n, l.QueryID, l.Iteration, p.n)
	case l.Iteration > iterations:
		return fmt.Errorf("feedback: %s:%d: iteration %d beyond %d", name, n, l.Iteration, iterations)
	case !l.Stop && l.Refined == "":
		return fmt.Errorf("feedback: %s:%d: query %q: no refined instruction and no stop", name, n, l.QueryID)
	}
	l.Replies = nil // only Refined and Stop are needed: keep memory small
	p.n, p.last = p.n+1, l
	return nil
}

// diff lists the differences between a recorded header and a new one, Info aside.
func (h Header) diff(n Header) []string {
	var out []string
	cmp := func(name string, a, b any) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			out = append(out, fmt.Sprintf("%s: file has %s, now %s", name, clipDiff(string(ja)), clipDiff(string(jb))))
		}
	}
	cmp("format", h.Format, n.Format)
	cmp("data fingerprint", h.Fingerprint, n.Fingerprint)
	cmp("splits", h.Splits, n.Splits)
	cmp("k", h.K, n.K)
	cmp("iterations", h.Iterations, n.Iterations)
	for _, k := range union(h.Settings, n.Settings) {
		cmp(k, h.Settings[k], n.Settings[k])
	}
	for _, k := range union(h.Prompts, n.Prompts) {
		cmp("prompt "+k, h.Prompts[k], n.Prompts[k])
	}
	return out
}

func union(a, b map[string]string) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func clipDiff(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// chunk runs the loop of each query of us, cfg.Concurrency at a time, and returns each one's
// new lines, in the order of us. tick is called as each query finishes.
func (c *Config) chunk(ctx context.Context, us []unit, known map[ukey]*prior, tools []Tool, tick func()) ([][]Line, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([][]Line, len(us))
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range min(c.Concurrency, len(us)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ls, err := c.loop(ctx, us[i], known[ukey{us[i].split, c.Data.Queries[us[i].q].ID}], tools)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				out[i] = ls
				tick()
			}
		}()
	}
	for i := range us {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("feedback: %w", err)
	}
	return out, nil
}

// loop continues one query's loop after its existing lines and returns the new ones.
func (c *Config) loop(ctx context.Context, u unit, p *prior, tools []Tool) ([]Line, error) {
	q := c.Data.Queries[u.q]
	t, text := 0, q.Text
	if p.n > 0 {
		t, text = p.n, p.last.Refined
	}
	var out []Line
	for ; ; t++ {
		rk, err := c.Ranker.Rank(ctx, []string{text}, c.K)
		if err != nil {
			return nil, fmt.Errorf("feedback: query %s iteration %d: retrieve: %w", q.ID, t, err)
		}
		if len(rk) != 1 {
			return nil, fmt.Errorf("feedback: query %s iteration %d: retriever returned %d rankings for 1 instruction", q.ID, t, len(rk))
		}
		l := Line{QueryID: q.ID, Split: u.split, Iteration: t, Query: text, Retrieved: make([]string, len(rk[0].Tools))}
		got := make([]Tool, len(rk[0].Tools))
		for i, ti := range rk[0].Tools {
			if ti < 0 || ti >= len(tools) {
				return nil, fmt.Errorf("feedback: query %s: retriever returned tool index %d of %d", q.ID, ti, len(tools))
			}
			l.Retrieved[i], got[i] = tools[ti].ID, tools[ti]
		}
		if t >= c.Iterations {
			l.Stop, l.Reason = true, ReasonIterations
			return append(out, l), nil
		}
		st, err := c.Rewriter.Rewrite(ctx, Input{QueryID: q.ID, Original: q.Text, Query: text, Iteration: t, Tools: got})
		if err != nil {
			return nil, fmt.Errorf("feedback: %w", err)
		}
		l.Replies = st.Replies
		refined := oneLine(st.Refined)
		switch {
		case st.Err != "":
			l.Stop, l.Reason, l.Error = true, ReasonError, st.Err
		case st.Stop:
			l.Stop, l.Reason = true, ReasonNA
		case refined == "":
			l.Stop, l.Reason, l.Error = true, ReasonError, "the refiner returned no instruction"
		case strings.EqualFold(refined, oneLine(text)):
			l.Stop, l.Reason = true, ReasonUnchanged
		default:
			l.Refined = refined
		}
		out = append(out, l)
		if l.Stop {
			return out, nil
		}
		text = refined
	}
}
