package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Stderr is where Parse prints help and LR its warnings; nil (the default) is os.Stderr at
// the time of the call.
var Stderr io.Writer

func stderr() io.Writer {
	if Stderr == nil {
		return os.Stderr
	}
	return Stderr
}

// HelpFlags is the flag that prints every flag of a command with its help text.
const HelpFlags = "help-flags"

// commands describes each flag set by its name (the words after `toolret`): a one-line
// synopsis and the page of docs/ that explains it.
var commands = map[string]struct{ synopsis, doc string }{
	"train biencoder":    {"train a bi-encoder tool retriever (from scratch, a run, or a pre-trained model with -init)", "docs/training-a-bi-encoder.md"},
	"train mine":         {"mine hard negatives with a trained retriever", "docs/training-a-bi-encoder.md"},
	"train colt":         {"COLT's LightGCN graph stage on a trained bi-encoder (-first-stage RUN)", "docs/colt-graph-stage.md"},
	"train crossencoder": {"ToolRerank's cross-encoder reranker over a stage-1 run (-first-stage RUN)", "docs/reranking-toolrerank-and-classifiers.md"},
	"train classifier":   {"query-type or multi-label (MLC) tool classifier", "docs/reranking-toolrerank-and-classifiers.md"},
	"train refiner":      {"the Tool2Vec paper's ToolRefiner over a stage-1 run's candidates", "docs/toolrefiner-tool2vec-paper.md"},
	"train feedback":     {"collect iterative LLM feedback with a trained retriever", "docs/llm-feedback.md"},
	"train pretrain":     {"unsupervised MLM + contrastive pre-training on the tool corpus", "docs/training-a-bi-encoder.md"},
	"train plot":         {"overlay the training charts of several runs in one HTML page", "docs/training-a-bi-encoder.md"},
	"train migrate":      {"write run.json for a run made before it existed", "docs/training-a-bi-encoder.md"},
	"eval":               {"evaluate a method, run or model on a dataset split (Recall, NDCG, COMP@K)", "docs/evaluation.md"},
	"export":             {"export a run or pre-trained model as HF/sentence-transformers, ONNX or a served index", "docs/export.md"},
	"serve":              {"serve an exported index over HTTP and MCP", "docs/serve.md"},
	"encode":             {"embed texts with an encoder model", "docs/encoding.md"},
	"convert":            {"convert a dataset between the BEIR and Parquet layouts", "docs/data.md"},
	"import":             {"import tool definitions into a tool library from MCP servers, OpenAPI descriptions and function lists", "docs/tool-libraries.md"},
	"hub import":         {"put a model directory into the Hugging Face hub cache under its hub id", "docs/pre-trained-models.md"},
	"bench encode":       {"time encoding against PyTorch", "docs/benchmarks.md"},
	"bench train":        {"time training steps against PyTorch", "docs/benchmarks.md"},
	"bench matmul":       {"time matrix products against PyTorch", "docs/benchmarks.md"},
	"bench colt":         {"time COLT's graph stage", "docs/benchmarks.md"},
	"bench retrieve":     {"time retrieval", "docs/benchmarks.md"},
	"bench rerank":       {"time reranking", "docs/benchmarks.md"},
	"bench serve":        {"load-test a running server", "docs/benchmarks.md"},
}

// Parse parses args into fs as fs.Parse does, with toolret's messages. -h or -help prints a
// short synopsis (what the command does, its flag names, where the docs are) and returns
// flag.ErrHelp; -help-flags prints every flag with its help and returns flag.ErrHelp. An
// unknown flag's error names the closest defined flags ("did you mean -epochs?"); an old
// spelling of a renamed flag (Renamed) parses as the new one, with a deprecation note. Parse prints
// nothing on an error: the caller reports it.
func Parse(fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if n := strings.TrimLeft(a, "-"); n == HelpFlags && fs.Lookup(HelpFlags) == nil {
			fmt.Fprintf(stderr(), "usage: toolret %s [flags]\n\n", fs.Name())
			fs.SetOutput(stderr())
			fs.PrintDefaults()
			return flag.ErrHelp
		}
	}
	args = renameArgs(fs, args)
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err == nil {
		// Every command with -lr checks it here: an error unless > 0, a warning when far off
		// the usual range (LR).
		if f := fs.Lookup("lr"); f != nil && Set(fs)["lr"] {
			if v, perr := strconv.ParseFloat(f.Value.String(), 64); perr == nil {
				if err := LR(v); err != nil {
					return err
				}
			}
		}
	}
	switch {
	case err == nil && CheckOnly:
		return ErrCheckOnly
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		Synopsis(stderr(), fs)
		return err
	}
	const undefined = "flag provided but not defined: -"
	if msg := err.Error(); strings.HasPrefix(msg, undefined) {
		name := strings.TrimPrefix(msg, undefined)
		if s := Suggest(fs, name); len(s) > 0 {
			return fmt.Errorf("%s (did you mean -%s?)", msg, strings.Join(s, " or -"))
		}
		return fmt.Errorf("%s (toolret %s -h lists the flags)", msg, fs.Name())
	}
	return err
}

// Synopsis writes the short help of fs: a usage line, what the command does, its flag names,
// and where to read more.
func Synopsis(w io.Writer, fs *flag.FlagSet) {
	c := commands[fs.Name()]
	fmt.Fprintf(w, "usage: toolret %s [flags]\n", fs.Name())
	if c.synopsis != "" {
		fmt.Fprintf(w, "  %s\n", c.synopsis)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
	line := "flags:"
	for _, n := range names {
		if len(line)+1+len(n) > 96 {
			fmt.Fprintln(w, line)
			line = "      "
		}
		line += " " + n
	}
	fmt.Fprintln(w, line)
	fmt.Fprintf(w, "every flag with its help: toolret %s -%s", fs.Name(), HelpFlags)
	if c.doc != "" {
		fmt.Fprintf(w, "; docs: %s", c.doc)
	}
	fmt.Fprintln(w)
}

// Suggest returns the defined flags of fs closest to name (Closest).
func Suggest(fs *flag.FlagSet, name string) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return Closest(name, names)
}

// Closest returns up to three of names closest to name, nearest first: those within an edit
// distance of a third of name's length (at least 1, at most 3), or that start with name or
// it with them (when name has 3 or more letters).
func Closest(name string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	limit := min(max(len(name)/3, 1), 3)
	var cs []cand
	for _, n := range names {
		d := editDistance(name, n)
		if d > limit && len(name) >= 3 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)) {
			d = limit
		}
		if d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, c := range cs {
		if len(out) == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// editDistance is the optimal-string-alignment distance between a and b (insertions,
// deletions, substitutions and transpositions of adjacent letters), by bytes: flag and
// command names are ASCII.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// ErrCheckOnly is what Parse returns after parsing, in place of nil, while CheckOnly is set.
var ErrCheckOnly = errors.New("flags parsed (check only: nothing run)")

// CheckOnly makes Parse stop every command right after its flags parse (ErrCheckOnly): the
// test that checks each command line of the docs against the real flag sets sets it.
var CheckOnly bool
