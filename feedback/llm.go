package feedback

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"unicode"

	"github.com/toolret/toolret/llm"
)

//go:embed prompts/*.txt
var promptFS embed.FS

// Prompt file names, in the order of the exchange.
const (
	ComprehensionFile = "comprehension.txt"
	AssessmentFile    = "assessment.txt"
	RefinementFile    = "refinement.txt"
)

// PromptFiles are the LLM refiner's prompt files, in the order of the exchange.
var PromptFiles = []string{ComprehensionFile, AssessmentFile, RefinementFile}

// Step names of the LLM refiner's Replies.
var stepNames = []string{"comprehension", "assessment", "refinement"}

// Prompts are the three prompts of the LLM refiner, text/template sources over PromptData,
// by file name (PromptFiles).
type Prompts map[string]string

// PromptData is what a prompt template sees.
type PromptData struct {
	// Instruction is q^t, Original q^0.
	Instruction, Original string
	// Iteration is t; K the number of tools.
	Iteration, K int
	// Tools are the retrieved tools rendered by FormatTools.
	Tools string
}

// DefaultPrompts returns the package's prompts (feedback/prompts/*.txt).
func DefaultPrompts() Prompts {
	p := Prompts{}
	for _, f := range PromptFiles {
		b, err := promptFS.ReadFile("prompts/" + f)
		if err != nil {
			panic(err) // embedded at build time
		}
		p[f] = string(b)
	}
	return p
}

// LoadPrompts reads the three prompt files from dir.
func LoadPrompts(dir string) (Prompts, error) {
	p := Prompts{}
	for _, f := range PromptFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("prompts: %w", err)
		}
		p[f] = string(b)
	}
	return p, nil
}

// Chatter is the chat client the LLM refiner talks to (*llm.Client).
type Chatter interface {
	Chat(ctx context.Context, msgs []llm.Message, opt llm.Options) (llm.Reply, error)
}

// LLMOptions shape the LLM refiner's requests.
type LLMOptions struct {
	// JSON asks for a JSON object at the refinement step (the client falls back without it
	// when the server refuses).
	JSON bool
	// MaxTokens caps each reply (0: the server's default).
	MaxTokens int
}

// LLM is the LLM refiner: one conversation per iteration, three user turns (the comprehension,
// assessment and refinement prompts) each answered by the model, so the step's three requests
// carry 1, 3 and 5 messages. The refinement reply is parsed by ParseRefinement.
type LLM struct {
	client Chatter
	tmpl   []*template.Template
	opt    LLMOptions
}

// NewLLM returns the LLM refiner over c with prompts p (all three files, valid templates).
func NewLLM(c Chatter, p Prompts, opt LLMOptions) (*LLM, error) {
	r := &LLM{client: c, opt: opt}
	for _, f := range PromptFiles {
		src, ok := p[f]
		if !ok || strings.TrimSpace(src) == "" {
			return nil, fmt.Errorf("prompts: %s missing or empty", f)
		}
		t, err := template.New(f).Option("missingkey=error").Parse(src)
		if err != nil {
			return nil, fmt.Errorf("prompts: %w", err)
		}
		if err := t.Execute(discard{}, PromptData{}); err != nil {
			return nil, fmt.Errorf("prompts: %w", err)
		}
		r.tmpl = append(r.tmpl, t)
	}
	return r, nil
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// Rewrite implements Refiner.
func (r *LLM) Rewrite(ctx context.Context, in Input) (Step, error) {
	pd := PromptData{Instruction: in.Query, Original: in.Original, Iteration: in.Iteration, K: len(in.Tools), Tools: FormatTools(in.Tools)}
	var msgs []llm.Message
	var st Step
	for i, t := range r.tmpl {
		var b strings.Builder
		if err := t.Execute(&b, pd); err != nil {
			return Step{}, fmt.Errorf("prompt %s: %w", PromptFiles[i], err)
		}
		msgs = append(msgs, llm.Message{Role: "user", Content: strings.TrimSpace(b.String())})
		rep, err := r.client.Chat(ctx, msgs, llm.Options{JSON: r.opt.JSON && i == len(r.tmpl)-1, MaxTokens: r.opt.MaxTokens})
		if err != nil {
			if tooLong(err) {
				st.Err = fmt.Sprintf("%s: request refused: %v", stepNames[i], err)
				return st, nil
			}
			return Step{}, fmt.Errorf("query %s iteration %d, %s: %w", in.QueryID, in.Iteration, stepNames[i], err)
		}
		st.Replies = append(st.Replies, Reply{Step: stepNames[i], Text: rep.Content})
		if strings.TrimSpace(rep.Content) == "" {
			st.Err = stepNames[i] + ": empty reply"
			return st, nil
		}
		msgs = append(msgs, llm.Message{Role: "assistant", Content: rep.Content})
	}
	refined, stop, err := ParseRefinement(st.Replies[len(st.Replies)-1].Text)
	switch {
	case err != nil:
		st.Err = "refinement: " + err.Error()
	case stop:
		st.Stop = true
	default:
		st.Refined = refined
	}
	return st, nil
}

// tooLong reports a request the server refused for this query alone: 413, or 400/422 about
// the context length. Other refusals (a wrong model name, a bad key) concern every query and
// stop the run.
func tooLong(err error) bool {
	var se *llm.StatusError
	if !errors.As(err, &se) {
		return false
	}
	if se.Code == 413 {
		return true
	}
	b := strings.ToLower(se.Body)
	return (se.Code == 400 || se.Code == 422) && (strings.Contains(b, "context") || strings.Contains(b, "too long") || strings.Contains(b, "maximum") && strings.Contains(b, "token"))
}

var (
	thinkRe = regexp.MustCompile(`(?s)<think>.*?</think>`)
	fenceRe = regexp.MustCompile("(?m)^\\s*```[a-zA-Z]*\\s*$")
	labelRe = regexp.MustCompile(`(?im)^[ \t*_#>-]*(?:refined|rewritten|new|improved)?[ \t]*(?:user[ \t]+)?(?:instruction|query)[ \t*_]*[:：][ \t*_]*(.*)$`)
)

// jsonKeys are the fields a JSON reply may carry the refined instruction in, in order of
// preference.
var jsonKeys = []string{"refined_instruction", "refined", "instruction", "new_instruction", "refined_query", "query"}

// ParseRefinement reads a refinement reply: the refined instruction, or stop when the model
// answered "N/A". It accepts, in order: a JSON object (anywhere in the reply, fenced or not)
// with refined_instruction (or refined, instruction, new_instruction, refined_query, query, or
// its only string field), whose value "N/A" (or null) means stop; a reply whose first line
// is "N/A" (with quotes, punctuation or an explanation after it); a labelled line
// ("Refined instruction: ..."; the text after the label, or the lines that follow it up to a
// blank line); a reply of one paragraph, taken whole. <think> blocks are ignored. Anything
// else is an error saying why.
func ParseRefinement(reply string) (refined string, stop bool, err error) {
	s := strings.TrimSpace(thinkRe.ReplaceAllString(reply, ""))
	s = strings.TrimSpace(fenceRe.ReplaceAllString(s, ""))
	if s == "" {
		return "", false, errors.New("empty reply")
	}
	if obj, ok := firstObject(s); ok {
		v, found := any(nil), false
		for _, k := range jsonKeys {
			if x, ok := obj[k]; ok {
				v, found = x, true
				break
			}
		}
		if !found {
			var strs []string
			for _, x := range obj {
				if str, ok := x.(string); ok {
					strs = append(strs, str)
				}
			}
			if len(strs) != 1 {
				return "", false, fmt.Errorf("JSON reply without refined_instruction: %s", short(s))
			}
			v, found = strs[0], true
		}
		switch x := v.(type) {
		case nil:
			return "", true, nil
		case string:
			if isNA(x) {
				return "", true, nil
			}
			if r := clean(x); r != "" {
				return r, false, nil
			}
			return "", false, errors.New("JSON reply with an empty refined_instruction")
		default:
			return "", false, fmt.Errorf("JSON reply: refined_instruction is %T, not a string", v)
		}
	}
	first, _, _ := strings.Cut(s, "\n")
	if isNA(first) {
		return "", true, nil
	}
	if m := labelRe.FindStringSubmatchIndex(s); m != nil {
		v := strings.TrimSpace(s[m[2]:m[3]])
		if v == "" { // the instruction follows on the next lines, up to a blank line
			rest := strings.TrimLeft(s[m[1]:], "\r\n")
			v, _, _ = strings.Cut(rest, "\n\n")
		}
		if isNA(v) {
			return "", true, nil
		}
		if r := clean(v); r != "" {
			return r, false, nil
		}
		return "", false, fmt.Errorf("label without an instruction: %s", short(s))
	}
	if paras := paragraphs(s); len(paras) == 1 {
		if r := clean(paras[0]); r != "" {
			return r, false, nil
		}
	}
	return "", false, fmt.Errorf("no refined instruction or N/A found: %s", short(s))
}

// firstObject decodes the first JSON object in s.
func firstObject(s string) (map[string]any, bool) {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		var m map[string]any
		if json.NewDecoder(strings.NewReader(s[i:])).Decode(&m) == nil {
			return m, true
		}
		j := strings.IndexByte(s[i+1:], '{')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return nil, false
}

// isNA reports an "N/A" answer: N/A (or n.a., NA) alone, quoted or emphasised, possibly
// followed by punctuation or an explanation.
func isNA(s string) bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s), "\"'`*_“”‘’ "))
	if t == "na" || t == "na." {
		return true
	}
	for _, p := range []string{"n/a", "n.a."} {
		if t == p {
			return true
		}
		if rest, ok := strings.CutPrefix(t, p); ok {
			r := []rune(rest)[0]
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return true
			}
		}
	}
	return false
}

// clean returns an instruction on one line, without surrounding quotes or emphasis.
func clean(s string) string {
	return strings.Trim(oneLine(s), "\"'`*_“”‘’ ")
}

func paragraphs(s string) []string {
	var out []string
	for _, p := range regexp.MustCompile(`\n\s*\n`).Split(s, -1) {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// short quotes the start of a reply for an error message.
func short(s string) string {
	r := []rune(oneLine(s))
	if len(r) > 120 {
		return fmt.Sprintf("%q…", string(r[:120]))
	}
	return fmt.Sprintf("%q", string(r))
}
