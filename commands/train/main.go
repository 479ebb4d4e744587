// Package traincmd is the `toolret train` command; it trains toolret models.
//
//	train [KIND] [flags]        train a model of a registered kind (package kinds; biencoder, the default)
//	train mine -run RUN [flags] mine hard negatives with a trained retriever
//	train migrate -run RUN [-data DIR] [-dev F -seed N]  write run.json for a run made before it existed
//	train feedback -first-stage RUN -llm-url URL -llm-model NAME -out FILE.jsonl [flags]  collect iterative LLM feedback (package feedback)
//	train plot -out FILE RUN...  overlay the training charts of several runs in one page
//	train help                  list the kinds and commands with their help lines
//
// The kinds are the registered ones with a Command (kinds.Kind): biencoder, classifier, colt,
// crossencoder, pretrain and refiner are built in; `train help` lists them. With no flags it
// trains a small bi-encoder from scratch on the embedded default dataset and prints its test
// metrics. See `train biencoder -h` and `train mine -h`.
package traincmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolret/toolret/kinds"
	_ "github.com/toolret/toolret/kinds/all" // every built-in kind registers itself
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/pretrain"
	"github.com/toolret/toolret/models/refiner"
)

// The built-in kinds' commands: flags parsed into their typed configurations (package
// internal/cli, which the model packages do not import).
func init() {
	for name, cmd := range map[string]func([]string) error{
		biencoder.Kind:    biencoderCmd,
		classifier.Kind:   classifierCmd,
		colt.Kind:         coltCmd,
		crossencoder.Kind: crossencoderCmd,
		pretrain.Kind:     pretrainCmd,
		refiner.Kind:      refinerCmd,
	} {
		kinds.Register(kinds.Kind{Name: name, Command: cmd})
	}
}

// defaultKind is what `toolret train` trains without a kind.
const defaultKind = biencoder.Kind

// tool is a train command that is not a model kind.
type tool struct {
	run  func(args []string) error
	help string
}

// tools are train's commands that are not model kinds, in help order.
var tools = []struct {
	name string
	tool
}{
	{"mine", tool{mineCmd, "mine hard negatives with a trained retriever"}},
	{"feedback", tool{feedbackCmd, "collect iterative LLM feedback with a trained retriever"}},
	{"migrate", tool{migrateCmd, "write run.json for a run made before it existed"}},
	{"plot", tool{plotCmd, "overlay the training charts of several runs in one HTML page"}},
}

// Command is one of `toolret train`'s commands: a registered kind or a tool.
type Command struct {
	Name, Help string
	// Kind says whether it trains a model kind (package kinds).
	Kind bool
	run  func(args []string) error
}

// Commands returns train's commands: the default kind, the other registered kinds with a
// Command (sorted), then the tools (mine, feedback, migrate, plot).
func Commands() []Command {
	var out, rest []Command
	for _, k := range kinds.All() {
		if k.Command == nil {
			continue
		}
		c := Command{Name: k.Name, Help: k.Help, Kind: true, run: k.Command}
		if k.Name == defaultKind {
			out = append(out, c)
		} else {
			rest = append(rest, c)
		}
	}
	out = append(out, rest...)
	for _, t := range tools {
		out = append(out, Command{Name: t.name, Help: t.help, run: t.run})
	}
	return out
}

// Summary is the one line toolret's help gives `train`: its commands, the default marked.
func Summary() string {
	var ns []string
	for _, c := range Commands() {
		if c.Name == defaultKind {
			ns = append(ns, c.Name+" (default)")
		} else {
			ns = append(ns, c.Name)
		}
	}
	return "train a model: " + strings.Join(ns, ", ")
}

// Usage writes `toolret train help`: every command with its help line.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: toolret train [COMMAND] [flags]   (COMMAND defaults to "+defaultKind+")")
	fmt.Fprintln(w)
	for _, c := range Commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.Name, c.Help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "toolret train COMMAND -h: the command's flags")
}

// Main runs `toolret train` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	cmd := defaultKind
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" {
		Usage(os.Stdout)
		return 0
	}
	err := run(cmd, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		return 1
	}
	return 0
}

// run runs the train command named cmd.
func run(cmd string, args []string) error {
	cs := Commands()
	names := make([]string, len(cs))
	for i, c := range cs {
		if c.Name == cmd {
			return c.run(args)
		}
		names[i] = c.Name
	}
	return fmt.Errorf("unknown command %q (%s)", cmd, strings.Join(names, ", "))
}
