package feedback

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
)

// Judge tells which retrieved tools serve an instruction: one score in [0, 1] per tool (a
// probability for models trained with a sigmoid; see LoadJudge), higher is better. It must be
// deterministic and safe for concurrent use, as a Refiner.
type Judge interface {
	Judge(ctx context.Context, instruction string, tools []Tool) ([]float32, error)
}

// PRFOptions shape the pseudo-relevance-feedback refiner.
type PRFOptions struct {
	// Threshold: a tool is accepted when its score is at least this (default 0.5).
	Threshold float64
	// MaxTools caps the accepted tools written into the instruction, best scored first
	// (default 3).
	MaxTools int
	// MaxChars clips each accepted tool's description, in characters at a word boundary
	// (default 100; negative: names only).
	MaxChars int
}

// Defaults of PRFOptions.
const (
	DefaultPRFThreshold = 0.5
	DefaultPRFTools     = 3
	DefaultPRFChars     = 100
)

// PRF is the LLM-free refiner: pseudo-relevance feedback. At iteration t it asks a Judge
// (a toolret classifier) which of the retrieved tools serve the user's instruction q^0 —
// always q^0, never q^t: q^t already holds the names and descriptions of the tools accepted
// before, so a judge reading it would confirm its own expansion — and rewrites the
// instruction as
//
//	q^(t+1) = q^0 + " " + "Name API: description; Name API: description; ..."
//
// over the accepted tools (score >= Threshold, at most MaxTools, best scored first, ties by
// tool index; descriptions clipped to MaxChars). The rewrite starts from q^0 every time, so
// it cannot drift: its length is bounded and it depends only on the accepted set. The loop
// stops ("N/A") when nothing is accepted, or when the accepted set did not change from the
// previous iteration: then the rewrite equals q^t (at t = 0, q^0 itself: an accepted tool
// always changes it).
//
// PRF is deterministic and safe for concurrent use when its Judge is. Its Replies are the
// judge's scores of the retrieved tools ("judge") and the accepted tools ("accepted").
type PRF struct {
	judge Judge
	opt   PRFOptions
}

// NewPRF returns the pseudo-relevance-feedback refiner over j with o (zero fields take the
// defaults).
func NewPRF(j Judge, o PRFOptions) (*PRF, error) {
	if j == nil {
		return nil, errors.New("prf: no judge")
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultPRFThreshold
	}
	if o.MaxTools == 0 {
		o.MaxTools = DefaultPRFTools
	}
	if o.MaxChars == 0 {
		o.MaxChars = DefaultPRFChars
	}
	switch {
	case !(o.Threshold > 0 && o.Threshold <= 1):
		return nil, fmt.Errorf("prf: threshold %v: must be in (0, 1]", o.Threshold)
	case o.MaxTools < 0:
		return nil, fmt.Errorf("prf: max tools %d: must be > 0", o.MaxTools)
	}
	return &PRF{judge: j, opt: o}, nil
}

// Options returns the refiner's options, defaults filled in.
func (p *PRF) Options() PRFOptions { return p.opt }

// Settings returns the options as a collection's header records them.
func (p *PRF) Settings() map[string]string {
	return map[string]string{
		"prf-threshold": strconv.FormatFloat(p.opt.Threshold, 'g', -1, 64),
		"prf-tools":     strconv.Itoa(p.opt.MaxTools),
		"prf-chars":     strconv.Itoa(p.opt.MaxChars),
		"prf-judges":    "q0",
	}
}

// Rewrite implements Refiner.
func (p *PRF) Rewrite(ctx context.Context, in Input) (Step, error) {
	var st Step
	if len(in.Tools) == 0 {
		st.Stop = true
		st.Replies = []Reply{{Step: "accepted", Text: "none: no tool retrieved"}}
		return st, nil
	}
	scores, err := p.judge.Judge(ctx, in.Original, in.Tools)
	if err != nil {
		return st, fmt.Errorf("prf: query %s: %w", in.QueryID, err)
	}
	if len(scores) != len(in.Tools) {
		return st, fmt.Errorf("prf: query %s: the judge returned %d scores for %d tools", in.QueryID, len(scores), len(in.Tools))
	}
	acc := Accept(in.Tools, scores, p.opt.Threshold, p.opt.MaxTools)
	var b strings.Builder
	for i, t := range in.Tools {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%.3f", t.ID, scores[i])
	}
	st.Replies = []Reply{{Step: "judge", Text: b.String()}}
	if len(acc) == 0 {
		st.Stop = true
		st.Replies = append(st.Replies, Reply{Step: "accepted", Text: fmt.Sprintf("none (threshold %g)", p.opt.Threshold)})
		return st, nil
	}
	ids := make([]string, len(acc))
	for i, t := range acc {
		ids[i] = t.ID
	}
	st.Replies = append(st.Replies, Reply{Step: "accepted", Text: strings.Join(ids, " ")})
	refined := Rewrite(in.Original, acc, p.opt.MaxChars)
	if strings.EqualFold(oneLine(refined), oneLine(in.Query)) {
		st.Stop = true
		st.Replies = append(st.Replies, Reply{Step: "stop", Text: "N/A: the accepted tools are those of the previous iteration"})
		return st, nil
	}
	st.Refined = refined
	return st, nil
}

// Accept returns the tools whose score is at least threshold, best scored first (ties by
// tool index), at most max of them (max <= 0: all).
func Accept(tools []Tool, scores []float32, threshold float64, max int) []Tool {
	var idx []int
	for i, s := range scores {
		if float64(s) >= threshold {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if scores[a] != scores[b] {
			if scores[a] > scores[b] {
				return -1
			}
			return 1
		}
		return tools[a].Index - tools[b].Index
	})
	if max > 0 && len(idx) > max {
		idx = idx[:max]
	}
	out := make([]Tool, len(idx))
	for i, j := range idx {
		out[i] = tools[j]
	}
	return out
}

// Rewrite returns q0 followed by each tool's names and description, "q0 Name API:
// description; Name API: description" (a tool without names shows its id), descriptions
// without their final period and clipped to chars characters at a word boundary (chars < 0:
// names only). Tools whose entries read the same are written once.
func Rewrite(q0 string, tools []Tool, chars int) string {
	var parts []string
	for _, t := range tools {
		name := oneLine(strings.TrimSpace(t.Name + " " + t.API))
		if name == "" {
			name = t.ID
		}
		if d := strings.TrimRight(oneLine(t.Description), ".;, "); chars >= 0 && d != "" {
			name += ": " + clipWords(d, chars)
		}
		if !slices.Contains(parts, name) {
			parts = append(parts, name)
		}
	}
	q := oneLine(q0)
	if len(parts) == 0 {
		return q
	}
	return q + " " + strings.Join(parts, "; ")
}

// clipWords clips s to at most n characters, cutting at the last space before the limit
// when there is one, and trims trailing punctuation and spaces.
func clipWords(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if !unicode.IsSpace(r[n]) { // mid-word: back to the last space
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
	}
	return strings.TrimRightFunc(cut, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsPunct(c) })
}

// Judge kinds LoadJudge detects.
const (
	JudgeMLC          = "mlc"
	JudgeRefiner      = "refiner"
	JudgeCrossEncoder = "crossencoder"
)

// LoadJudge loads a trained toolret classifier run (or checkpoint) as a Judge of d's tools,
// its kind detected from the run's configuration file:
//
//   - mlc (train classifier -kind mlc): the classifier's probability of each tool for the
//     instruction, from one forward pass over all tools (sigmoid with -loss bce; with -loss
//     softmax the probabilities of all tools sum to 1, so use a much lower threshold);
//   - refiner (train refiner): the ToolRefiner reading the instruction with the retrieved
//     tools as its candidate list, sigmoid of its logits with -loss bce, else the softmax over
//     the candidates it scores; tools beyond its N slots score 0;
//   - crossencoder (train crossencoder): sigmoid of the cross-encoder's logit for each
//     (instruction, tool) pair (a probability when trained with -loss bce; list-wise training
//     gives scores whose level is not calibrated).
//
// A run recorded on other data (run.json's fingerprint) is refused.
func LoadJudge(run string, d *data.Dataset, be compute.Backend) (Judge, string, error) {
	if m, err := rundir.Read(rundir.RunOf(run)); err == nil {
		if err := m.CheckData(d); err != nil {
			return nil, "", fmt.Errorf("prf model %s: %w", run, err)
		}
	} else if !errors.Is(err, rundir.ErrNoMeta) {
		return nil, "", fmt.Errorf("prf model: %w", err)
	}
	kind, err := judgeKind(run)
	if err != nil {
		return nil, "", err
	}
	switch kind {
	case JudgeMLC:
		m, err := classifier.LoadRun(run, be)
		if err != nil {
			return nil, "", fmt.Errorf("prf model %s: %w", run, err)
		}
		if _, err := classifier.NewRanker(m, d); err != nil { // an mlc model over d's tools
			return nil, "", fmt.Errorf("prf model %s: %w", run, err)
		}
		return &mlcJudge{m: m, cache: map[string][]float32{}}, kind, nil
	case JudgeRefiner:
		m, err := refiner.LoadRun(run, be)
		if err != nil {
			return nil, "", fmt.Errorf("prf model %s: %w", run, err)
		}
		if m.Cfg.Tools != len(d.Tools) {
			return nil, "", fmt.Errorf("prf model %s: a refiner over %d tools, the dataset has %d", run, m.Cfg.Tools, len(d.Tools))
		}
		return refinerJudge{m}, kind, nil
	default:
		texts := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			texts[i] = t.Text
		}
		m, err := crossencoder.LoadRun(run, be, texts)
		if err != nil {
			return nil, "", fmt.Errorf("prf model %s: %w", run, err)
		}
		return crossJudge{m}, kind, nil
	}
}

// judgeKind detects the kind of run by its configuration file, in the run directory or in
// its best checkpoint (or the checkpoint given).
func judgeKind(run string) (string, error) {
	kinds := map[string]string{classifier.ConfigFile: JudgeMLC, refiner.ConfigFile: JudgeRefiner, crossencoder.ConfigFile: JudgeCrossEncoder}
	if p, ok := rundir.FindConfig(run, classifier.ConfigFile, refiner.ConfigFile, crossencoder.ConfigFile); ok {
		kind := kinds[filepath.Base(p)]
		if kind == JudgeMLC {
			b, err := os.ReadFile(p)
			if err != nil {
				return "", fmt.Errorf("prf model %s: %w", run, err)
			}
			cfg, err := classifier.Unmarshal(b)
			if err != nil {
				return "", fmt.Errorf("prf model %s: %w", run, err)
			}
			if cfg.Kind != classifier.KindMLC {
				return "", fmt.Errorf("prf model %s: a %s classifier; the judge must be an mlc classifier, a refiner or a cross-encoder run", run, cfg.Kind)
			}
		}
		return kind, nil
	}
	if _, err := os.Stat(run); err != nil {
		return "", fmt.Errorf("prf model: %w", err)
	}
	return "", fmt.Errorf("prf model %s: not an mlc classifier, refiner or cross-encoder run (no %s, %s or %s)", run, classifier.ConfigFile, refiner.ConfigFile, crossencoder.ConfigFile)
}

// mlcJudge reads an mlc classifier's probabilities of every tool for the instruction. The
// loop asks about one q^0 several times in a row: the latest instructions' rows are kept.
type mlcJudge struct {
	m     *classifier.Model
	mu    sync.Mutex
	cache map[string][]float32
}

const mlcCache = 256

func (j *mlcJudge) Judge(ctx context.Context, q string, tools []Tool) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	row, ok := j.cache[q]
	j.mu.Unlock()
	if !ok {
		p, err := j.m.Probabilities([]string{q})
		if err != nil {
			return nil, err
		}
		row = p[0]
		j.mu.Lock()
		if len(j.cache) >= mlcCache {
			clear(j.cache)
		}
		j.cache[q] = row
		j.mu.Unlock()
	}
	out := make([]float32, len(tools))
	for i, t := range tools {
		if t.Index < 0 || t.Index >= len(row) {
			return nil, fmt.Errorf("mlc judge: tool index %d of %d", t.Index, len(row))
		}
		out[i] = row[t.Index]
	}
	return out, nil
}

type refinerJudge struct{ m *refiner.Model }

func (j refinerJudge) Judge(ctx context.Context, q string, tools []Tool) ([]float32, error) {
	list := make([]int, len(tools))
	for i, t := range tools {
		list[i] = t.Index
	}
	s, err := j.m.Scores(ctx, []string{q}, [][]int{list})
	if err != nil {
		return nil, err
	}
	logits := s[0]
	out := make([]float32, len(tools))
	if j.m.Cfg.LossKind == refiner.LossBCE {
		for i, x := range logits {
			out[i] = float32(1 / (1 + math.Exp(-float64(x))))
		}
		return out, nil
	}
	mx := math.Inf(-1)
	for _, x := range logits {
		mx = math.Max(mx, float64(x))
	}
	sum := 0.0
	for _, x := range logits {
		sum += math.Exp(float64(x) - mx)
	}
	for i, x := range logits {
		out[i] = float32(math.Exp(float64(x)-mx) / sum)
	}
	return out, nil
}

type crossJudge struct{ m *crossencoder.Model }

func (j crossJudge) Judge(ctx context.Context, q string, tools []Tool) ([]float32, error) {
	idx := make([]int, len(tools))
	for i, t := range tools {
		idx[i] = t.Index
	}
	return j.m.Score(ctx, q, idx)
}
