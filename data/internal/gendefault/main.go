// Command gendefault writes toolret's embedded default dataset (data/default) from the
// hand-written catalogue in catalog.go. It is deterministic: the same seed gives the same files.
//
//	go run ./data/internal/gendefault -out data/default
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

var (
	out     = flag.String("out", "data/default", "output directory")
	seed    = flag.Uint64("seed", 7, "random seed")
	nQuery  = flag.Int("queries", 2400, "number of queries")
	testPct = flag.Float64("test", 0.15, "fraction of (seen-only) queries put in the test split")
)

// related lists, per tool, the tools a multi-step request plausibly combines it with.
var related = map[string][]string{
	"SkyCast Weather":        {"SkyRoute Flights", "StayFinder Hotels", "CityGuide Places", "TideWatch Marine", "ScoreLine Football", "FitTrack Workouts", "PingMail"},
	"TideWatch Marine":       {"SkyCast Weather", "StayFinder Hotels", "PingMail", "FitTrack Workouts"},
	"MarketPulse Stocks":     {"NewsWire", "FX Exchange Rates", "CoinLedger Crypto", "PingMail"},
	"CoinLedger Crypto":      {"MarketPulse Stocks", "FX Exchange Rates", "NewsWire"},
	"FX Exchange Rates":      {"SkyRoute Flights", "StayFinder Hotels", "MarketPulse Stocks", "CoinLedger Crypto", "GeoLocate"},
	"SkyRoute Flights":       {"StayFinder Hotels", "SkyCast Weather", "FX Exchange Rates", "CityGuide Places", "GeoLocate", "LinguaBridge Translate", "PingMail"},
	"StayFinder Hotels":      {"SkyRoute Flights", "CityGuide Places", "SkyCast Weather", "PingMail", "TuneStream Music", "ScoreLine Football"},
	"CityGuide Places":       {"StayFinder Hotels", "SkyCast Weather", "GeoLocate", "LinguaBridge Translate", "ReelBase Movies"},
	"PantryChef Recipes":     {"NutriFacts", "WineMatch Pairing", "PingMail", "FitTrack Workouts"},
	"NutriFacts":             {"PantryChef Recipes", "FitTrack Workouts"},
	"WineMatch Pairing":      {"PantryChef Recipes", "CityGuide Places"},
	"ScoreLine Football":     {"SkyCast Weather", "StayFinder Hotels", "NewsWire", "PingMail", "SkyRoute Flights"},
	"FitTrack Workouts":      {"NutriFacts", "SkyCast Weather", "TuneStream Music", "PantryChef Recipes"},
	"TuneStream Music":       {"StayFinder Hotels", "SkyRoute Flights", "NewsWire", "PingMail", "FitTrack Workouts"},
	"ReelBase Movies":        {"CityGuide Places", "PingMail", "NewsWire"},
	"PingMail":               {"LinguaBridge Translate", "GeoLocate"},
	"LinguaBridge Translate": {"PingMail", "CityGuide Places", "GeoLocate"},
	"GeoLocate":              {"SkyCast Weather", "SkyRoute Flights", "CityGuide Places", "FX Exchange Rates"},
	"NewsWire":               {"MarketPulse Stocks", "ScoreLine Football", "PingMail"},
}

var openers = []string{"", "", "", "Can you ", "Please ", "I need to ", "Could you ", "Help me ", "I'd like you to ", "Quick one: "}

var contexts = map[string][]string{
	"Travel":        {"I'm travelling to {city} soon. ", "Planning a trip to {city}: ", "Going to {city} for work, ", "We're heading to {city} on {day}. "},
	"Weather":       {"Thinking about a beach weekend. ", "Before I head out, ", "Planning an outdoor day. "},
	"Finance":       {"I'm reviewing my portfolio. ", "Thinking about investing. ", "For my finance report, "},
	"Food":          {"I'm cooking for friends tonight. ", "Trying to eat healthier. ", "Planning dinner: "},
	"Sports":        {"Big football fan here. ", "Getting back into training. ", "For the weekend, "},
	"Media":         {"Looking for something to watch or listen to. ", "It's a quiet evening. ", "For my playlist, "},
	"Communication": {"", "Quick admin task: "},
	"Data":          {"", "For some background, "},
}

var joiners = [][2]string{{", and ", ""}, {", then ", ""}, {". Also, ", ""}, {", plus ", ""}, {" and ", ""}, {"; after that ", ""}}

type apiRef struct{ tool, api int }

func (r apiRef) key() string { return catalog[r.tool].name + "/" + catalog[r.tool].apis[r.api].name }

var slotRe = regexp.MustCompile(`\{([a-z0-9]+)\}`)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gendefault:", err)
		os.Exit(1)
	}
}

func run() error {
	rng := rand.New(rand.NewPCG(*seed, 0x64656661756c74))
	var refs []apiRef
	toolIdx := map[string]int{}
	for ti, t := range catalog {
		toolIdx[t.name] = ti
		for ai := range t.apis {
			refs = append(refs, apiRef{ti, ai})
		}
	}
	for name, rel := range related {
		if _, ok := toolIdx[name]; !ok {
			return fmt.Errorf("related: unknown tool %q", name)
		}
		for _, r := range rel {
			if _, ok := toolIdx[r]; !ok {
				return fmt.Errorf("related[%s]: unknown tool %q", name, r)
			}
		}
	}
	id := map[string]int{}
	for i, r := range refs {
		id[r.key()] = i
	}
	for _, t := range catalog {
		for _, a := range t.apis {
			if len(standalone(a.phrases)) == 0 {
				return fmt.Errorf("catalog %s/%s: every phrase starts with ~", t.name, a.name)
			}
			for _, ph := range a.phrases {
				for _, m := range slotRe.FindAllStringSubmatch(ph, -1) {
					if len(slotValues[m[1]]) == 0 {
						return fmt.Errorf("catalog %s/%s: no values for slot {%s} in %q", t.name, a.name, m[1], ph)
					}
				}
			}
		}
	}
	for k := range unseen {
		if _, ok := id[k]; !ok {
			return fmt.Errorf("unseen: unknown API %q", k)
		}
	}

	type query struct {
		text string
		apis []int
	}
	var queries []query
	seenText := map[string]bool{}
	for attempts := 0; len(queries) < *nQuery && attempts < *nQuery*50; attempts++ {
		n := pickSize(rng)
		first := refs[rng.IntN(len(refs))]
		if unseen[first.key()] && rng.Float64() < 0.8 {
			continue // APIs kept for the test split are rarer, so the test split stays ~20%.
		}
		set := []apiRef{first}
		for len(set) < n {
			last := set[rng.IntN(len(set))]
			var cand apiRef
			switch u := rng.Float64(); {
			case u < 0.4: // same tool
				cand = apiRef{last.tool, rng.IntN(len(catalog[last.tool].apis))}
			default:
				rel := related[catalog[last.tool].name]
				t := toolIdx[rel[rng.IntN(len(rel))]]
				cand = apiRef{t, rng.IntN(len(catalog[t].apis))}
			}
			if unseen[cand.key()] && rng.Float64() < 0.8 {
				continue
			}
			dup := false
			for _, s := range set {
				dup = dup || s == cand
			}
			if !dup {
				set = append(set, cand)
			}
		}
		text := compose(rng, set)
		if seenText[text] {
			continue
		}
		seenText[text] = true
		q := query{text: text}
		for _, r := range set {
			q.apis = append(q.apis, id[r.key()])
		}
		sort.Ints(q.apis)
		queries = append(queries, q)
	}
	if len(queries) < *nQuery {
		return fmt.Errorf("only %d distinct queries after many attempts", len(queries))
	}

	if err := os.MkdirAll(filepath.Join(*out, "qrels"), 0o755); err != nil {
		return err
	}
	// Corpus.
	var corpus strings.Builder
	for i, r := range refs {
		t, a := catalog[r.tool], catalog[r.tool].apis[r.api]
		req, _ := json.Marshal(params(a.required))
		opt, _ := json.Marshal(params(a.optional))
		text := fmt.Sprintf("category_name:%s, tool_name:%s, api_name:%s, api_description:%s, required_params: %s, optional_params: %s",
			t.category, t.name, a.name, a.desc, req, opt)
		line, _ := json.Marshal(map[string]any{"_id": fmt.Sprint(i), "title": "", "text": text,
			"metadata": map[string]string{"category_name": t.category, "tool_name": t.name, "api_name": a.name}})
		corpus.Write(line)
		corpus.WriteByte('\n')
	}
	// Splits: a query that uses an unseen API goes to test; the rest are split at random.
	var qlines strings.Builder
	qrels := map[string]*strings.Builder{"train": {}, "test": {}}
	qscene := map[string]*strings.Builder{"train": {}, "test": {}}
	for _, b := range qrels {
		b.WriteString("query-id\tcorpus-id\tscore\n")
	}
	sceneOf := map[string]int{}
	var scenes [][]int
	perm := rng.Perm(len(queries))
	for qid, qi := range perm {
		q := queries[qi]
		line, _ := json.Marshal(map[string]any{"_id": fmt.Sprint(qid), "text": q.text, "metadata": map[string]any{}})
		qlines.Write(line)
		qlines.WriteByte('\n')
		split := "train"
		for _, a := range q.apis {
			if unseen[refs[a].key()] {
				split = "test"
			}
		}
		if split == "train" && rng.Float64() < *testPct {
			split = "test"
		}
		for _, a := range q.apis {
			fmt.Fprintf(qrels[split], "%d\t%d\t1\n", qid, a)
		}
		key := fmt.Sprint(q.apis)
		s, ok := sceneOf[key]
		if !ok {
			s = len(scenes)
			sceneOf[key] = s
			scenes = append(scenes, q.apis)
		}
		fmt.Fprintf(qscene[split], "%d\t%d\n", qid, s)
	}
	var st strings.Builder
	for s, apis := range scenes {
		for _, a := range apis {
			fmt.Fprintf(&st, "%d\t%d\n", s, a)
		}
	}
	files := map[string]string{
		"corpus.jsonl":          corpus.String(),
		"queries.jsonl":         qlines.String(),
		"qrels/train.tsv":       qrels["train"].String(),
		"qrels/test.tsv":        qrels["test"].String(),
		"query_scene_train.txt": qscene["train"].String(),
		"query_scene_test.txt":  qscene["test"].String(),
		"scene_tool.txt":        st.String(),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("gendefault: %d tools, %d APIs, %d queries, %d scenes -> %s\n", len(catalog), len(refs), len(queries), len(scenes), *out)
	return nil
}

// pickSize draws the number of APIs a query needs: 1 (30%), 2 (35%), 3 (23%), 4 (12%).
func pickSize(rng *rand.Rand) int {
	switch u := rng.Float64(); {
	case u < 0.30:
		return 1
	case u < 0.65:
		return 2
	case u < 0.88:
		return 3
	}
	return 4
}

// compose writes one query asking for every API of set, with one value per slot type so the
// clauses talk about the same city, team or dish.
func compose(rng *rand.Rand, set []apiRef) string {
	slots := map[string]string{}
	fill := func(s string) string {
		return slotRe.ReplaceAllStringFunc(s, func(m string) string {
			k := m[1 : len(m)-1]
			if v, ok := slots[k]; ok {
				return v
			}
			vals := slotValues[k]
			if len(vals) == 0 {
				panic("gendefault: no values for slot " + k)
			}
			slots[k] = vals[rng.IntN(len(vals))]
			return slots[k]
		})
	}
	var b strings.Builder
	first := catalog[set[0].tool]
	if len(set) > 1 && rng.Float64() < 0.45 {
		ctx := contexts[first.category]
		b.WriteString(fill(ctx[rng.IntN(len(ctx))]))
	}
	clauses := make([]string, len(set))
	for i, r := range set {
		ph := catalog[r.tool].apis[r.api].phrases
		if i == 0 {
			ph = standalone(ph)
		}
		clauses[i] = fill(strings.TrimPrefix(ph[rng.IntN(len(ph))], "~"))
	}
	// Question-form first clauses ("what's", "is", ...) take no imperative opener.
	question := questionWords[strings.ToLower(strings.Fields(clauses[0])[0])]
	opener := ""
	if !question {
		opener = openers[rng.IntN(len(openers))]
		if b.Len() > 0 && strings.HasSuffix(opener, ": ") {
			opener = "" // no "Planning dinner: quick one: ..."
		}
		if f := strings.Fields(clauses[0]); len(f) > 1 && f[1] == "me" && (opener == "Help me " || opener == "I need to " || opener == "I'd like you to ") {
			opener = "Please " // not "help me give me ..."
		}
	}
	if strings.HasSuffix(b.String(), ", ") || strings.HasSuffix(b.String(), ": ") {
		opener = strings.ToLower(opener)
	}
	b.WriteString(opener)
	if strings.HasSuffix(b.String(), ". ") {
		clauses[0] = upperFirst(clauses[0])
	}
	for i, clause := range clauses {
		if i > 0 {
			j := joiners[rng.IntN(len(joiners))]
			if i == len(set)-1 && len(set) > 2 && rng.Float64() < 0.5 {
				j = [2]string{", and finally ", ""}
			}
			b.WriteString(j[0])
		}
		b.WriteString(clause)
	}
	s := upperFirst(strings.TrimSpace(b.String()))
	s = articleRe.ReplaceAllString(s, "${1}n ${2}")
	lo := strings.ToLower(opener)
	if question || strings.HasPrefix(lo, "can") || strings.HasPrefix(lo, "could") {
		return s + "?"
	}
	return s + "."
}

// articleRe finds "a" before a vowel sound among the slot values ("a Italian", "a 8-week").
var articleRe = regexp.MustCompile(`\b([Aa]) ([AEIOaeio]|8|11\b|18\b)`)

// standalone returns the phrases that do not refer back to an earlier clause.
func standalone(phrases []string) []string {
	var out []string
	for _, p := range phrases {
		if !strings.HasPrefix(p, "~") {
			out = append(out, p)
		}
	}
	return out
}

var questionWords = map[string]bool{"what": true, "what's": true, "how": true, "is": true, "are": true, "when": true, "which": true, "does": true, "did": true, "has": true, "who": true, "where": true, "will": true}

func upperFirst(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}

func params(ps []param) []map[string]string {
	out := []map[string]string{}
	for _, p := range ps {
		out = append(out, map[string]string{"name": p.name, "type": p.typ, "description": p.desc})
	}
	return out
}
