// Package synth makes synthetic training queries from tool definitions, for a tool library
// that has no queries of its own (a cold start): by templates over a tool's name,
// description and parameters (Templates: deterministic for a seed, no model needed), or by
// an LLM behind an OpenAI-compatible endpoint (LLM, package llm's client). Each query is a
// data.Example whose positive is its tool (Source "synthetic"); train biencoder -synthetic N
// fine-tunes a retriever on them (recipe.BiEncoder, biencoder.TrainSplit.Synthetic).
package synth

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strings"
	"unicode"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/library"
)

// Tool is what synthetic queries are made from: a tool's ID (the positive of its queries),
// its name, description and parameters.
type Tool struct {
	ID, Name, Description string
	Params                []library.Property
}

// FromLibrary returns the tools of library l (ID library.Tool.ID; name, description and
// the input schema's top-level properties).
func FromLibrary(l *library.Library) []Tool {
	out := make([]Tool, len(l.Tools))
	for i, t := range l.Tools {
		desc := t.Description
		if strings.TrimSpace(desc) == "" {
			desc = t.Title
		}
		out[i] = Tool{ID: t.ID(), Name: t.Name, Description: desc, Params: library.Properties(t.InputSchema)}
	}
	return out
}

// FromDataset returns the tools of dataset d: for a ToolBench-style text (ToolLens, ...)
// its tool and API names, api_description and required_params/optional_params; else the
// title as the name and the text as the description.
func FromDataset(d *data.Dataset) []Tool {
	out := make([]Tool, len(d.Tools))
	for i, t := range d.Tools {
		f := data.ParseToolBenchText(t.Text)
		tool, api := t.ToolName, t.APIName
		if tool == "" && api == "" {
			tool, api = f["tool_name"], f["api_name"]
		}
		x := Tool{ID: t.ID, Name: strings.TrimSpace(tool + " " + api), Description: f["api_description"]}
		if x.Name == "" {
			x.Name = t.Title
		}
		if x.Description == "" && f["api_name"] == "" {
			x.Description = t.Text
		}
		for _, kind := range []string{"required", "optional"} {
			for _, p := range textList(t.Text, kind+"_params:") {
				if m, ok := p.(map[string]any); ok {
					name, _ := m["name"].(string)
					desc, _ := m["description"].(string)
					if name != "" {
						x.Params = append(x.Params, library.Property{Name: name, Description: strings.TrimSpace(desc), Required: kind == "required"})
					}
				}
			}
		}
		out[i] = x
	}
	return out
}

// textList decodes the JSON list that follows key in a ToolBench-style text.
func textList(text, key string) []any {
	i := strings.Index(text, key)
	if i < 0 {
		return nil
	}
	var list []any
	if json.NewDecoder(strings.NewReader(text[i+len(key):])).Decode(&list) != nil {
		return nil
	}
	return list
}

// The templates, rendered over a tool's phrases (see phrases). A template whose phrase is
// empty is not rendered.
var templates = []struct {
	need string // which phrase must be there: "desc", "name", "param", "param2"
	f    func(p phrases) string
}{
	{"desc", func(p phrases) string { return p.Desc }},
	{"desc", func(p phrases) string { return "how do I " + p.Verb }},
	{"desc", func(p phrases) string { return "I want to " + p.Verb }},
	{"desc", func(p phrases) string { return "can you " + p.Verb + "?" }},
	{"desc", func(p phrases) string { return "I need a tool to " + p.Verb }},
	{"name", func(p phrases) string { return p.Name }},
	{"param", func(p phrases) string { return p.Name + " with " + p.P1 }},
	{"param", func(p phrases) string { return p.Verb + " for a given " + p.P1 }},
	{"param", func(p phrases) string { return "how do I " + p.Verb + " by " + p.P1 }},
	{"param2", func(p phrases) string { return p.Name + " by " + p.P1 + " and " + p.P2 }},
	{"pdesc", func(p phrases) string { return p.Verb + ": " + p.PDesc }},
	{"desc", func(p phrases) string { return "use " + p.Name + " to " + p.Verb }},
}

// phrases are the parts of a tool the templates use.
type phrases struct {
	// Desc is the description's first sentence (at most 24 words), Verb the same as a verb
	// phrase: lower-cased first letter, "This endpoint returns x" and "Returns x" as
	// "return x".
	Desc, Verb string
	// Name is the tool's name split into lower-case words (camelCase, snake_case, paths).
	Name string
	// P1 and P2 are two parameters' names as words (required ones first), PDesc the first
	// parameter description there is.
	P1, P2, PDesc string
}

var (
	sentenceEnd = regexp.MustCompile(`[.!?](\s|$)|\n`)
	camel       = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	nonWord     = regexp.MustCompile(`[^A-Za-z0-9]+`)
	version     = regexp.MustCompile(`^v\d+$`)
	lead        = regexp.MustCompile(`(?i)^(this|the) (endpoint|api|tool|function|method|operation|route|service)( will| can)? `)
)

func phrasesOf(t Tool) phrases {
	var p phrases
	p.Name = words(t.Name)
	desc := strings.TrimSpace(t.Description)
	if loc := sentenceEnd.FindStringIndex(desc); loc != nil {
		desc = desc[:loc[0]]
	}
	if w := strings.Fields(desc); len(w) > 24 {
		desc = strings.Join(w[:24], " ")
	} else {
		desc = strings.Join(w, " ")
	}
	p.Desc = desc
	p.Verb = verbPhrase(desc)
	var req, opt []library.Property
	for _, x := range t.Params {
		if x.Required {
			req = append(req, x)
		} else {
			opt = append(opt, x)
		}
	}
	ps := append(req, opt...)
	if len(ps) > 0 {
		p.P1 = words(ps[0].Name)
	}
	if len(ps) > 1 {
		p.P2 = words(ps[1].Name)
	}
	for _, x := range ps {
		if d := strings.TrimSpace(x.Description); d != "" {
			if w := strings.Fields(d); len(w) <= 16 {
				p.PDesc = strings.TrimRight(strings.Join(w, " "), ".")
				break
			}
		}
	}
	return p
}

// words splits a name into lower-case words: camelCase, snake_case, kebab-case, paths and
// dots; version segments (v1) are dropped.
func words(name string) string {
	name = camel.ReplaceAllString(name, "$1 $2")
	var out []string
	for _, w := range nonWord.Split(name, -1) {
		w = strings.ToLower(w)
		if w != "" && !version.MatchString(w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// verbPhrase turns a description's first sentence into a verb phrase: "This endpoint
// returns the weather" and "Returns the weather" become "return the weather".
func verbPhrase(desc string) string {
	desc = lead.ReplaceAllString(desc, "")
	if desc == "" {
		return ""
	}
	first, rest, _ := strings.Cut(desc, " ")
	if rest != "" {
		rest = " " + rest
	}
	r := []rune(first)
	if len(r) > 1 && unicode.IsUpper(r[0]) && unicode.IsUpper(r[1]) { // an acronym: not a verb
		return "find " + desc
	}
	low := strings.ToLower(first)
	base := low
	switch {
	case strings.HasSuffix(low, "ches"), strings.HasSuffix(low, "shes"), strings.HasSuffix(low, "sses"), strings.HasSuffix(low, "xes"), strings.HasSuffix(low, "oes"):
		base = strings.TrimSuffix(low, "es")
	case strings.HasSuffix(low, "ies") && len(low) > 4:
		base = strings.TrimSuffix(low, "ies") + "y"
	case strings.HasSuffix(low, "s") && len(low) > 3 && !strings.HasSuffix(low, "ss"):
		base = strings.TrimSuffix(low, "s")
	}
	if verbs[base] {
		return base + rest
	}
	// Not a verb: "Hourly weather data" → "find hourly weather data".
	return "find " + low + rest
}

// verbs are the base forms a tool description commonly starts with.
var verbs = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`get retrieve return fetch search find list create update delete remove add send convert
		generate check calculate compute translate lookup look provide obtain validate verify download upload set show track
		analyze analyse detect extract query predict post put read write make build run start stop cancel book buy sell
		order pay schedule parse format count compare recommend suggest summarize summarise classify identify estimate
		scan monitor subscribe unsubscribe register login log sign upload share publish display view open close enable
		disable reset replace rename move copy save load store echo fill allow give use access request resolve map
		transform encode decode encrypt decrypt shorten expand filter sort merge split tag rate review play pause stream
		call notify email text invite join leave follow unfollow like assign mark edit manage apply submit approve reject
		forecast measure test ping crawl scrape import export sync sum multiply divide subtract determine locate explore discover`) {
		verbs[v] = true
	}
}

// Candidates returns every distinct query the templates make of t, in template order.
func Candidates(t Tool) []string {
	p := phrasesOf(t)
	have := map[string]bool{"desc": p.Desc != "", "name": p.Name != "", "param": p.P1 != "" && p.Name != "" && p.Desc != "",
		"param2": p.P2 != "" && p.Name != "", "pdesc": p.PDesc != "" && p.Desc != ""}
	var out []string
	seen := map[string]bool{}
	for _, tp := range templates {
		if !have[tp.need] {
			continue
		}
		q := strings.Join(strings.Fields(tp.f(p)), " ")
		if k := strings.ToLower(q); q != "" && !seen[k] {
			seen[k] = true
			out = append(out, q)
		}
	}
	return out
}

// Templates returns n synthetic queries per tool (fewer when its templates make fewer
// distinct ones), drawn from Candidates by a generator seeded with seed and the tool's ID:
// the same tools, n and seed give the same queries. Tools are in the order given, each
// one's queries together.
func Templates(tools []Tool, n int, seed uint64) []data.Example {
	var out []data.Example
	for _, t := range tools {
		c := Candidates(t)
		h := fnv.New64a()
		h.Write([]byte(t.ID))
		r := rand.New(rand.NewPCG(seed, h.Sum64()))
		r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		for _, q := range c[:min(n, len(c))] {
			out = append(out, data.Example{Query: q, Positives: []string{t.ID}, Source: "synthetic"})
		}
	}
	return out
}
