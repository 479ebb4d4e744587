package clitest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caseTimeout bounds one command: a hang fails its case, not the whole test binary.
const caseTimeout = 60 * time.Second

var (
	bin string            // directory of the built commands
	fix map[string]string // fixture placeholders ("{run}") -> paths
)

// TestMain builds every command once and makes the shared fixtures: a tiny trained
// bi-encoder run and damaged copies of it, the embedded dataset in BEIR layout and damaged
// copies of it, and the run exported as a HuggingFace model directory.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("clitest: skipped in -short mode (builds every command and trains a tiny model)")
		os.Exit(0)
	}
	tmp, err := os.MkdirTemp("", "toolret-clitest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "clitest:", err)
		os.Exit(1)
	}
	code := 1
	if err := setup(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "clitest: setup:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// run runs a setup command in dir and returns an error with its output when it fails.
func run(dir, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func setup(tmp string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin = filepath.Join(tmp, "bin")
	start := time.Now()
	// The environment (GOTOOLCHAIN, GOEXPERIMENT=simd, GOFLAGS) is the test's: make test exports it.
	if err := run(root, "go", "build", "-o", filepath.Join(bin, "toolret"), "./cmd/toolret"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "clitest: built the commands in %v\n", time.Since(start).Round(time.Millisecond))
	fx := filepath.Join(tmp, "fixtures")
	if err := os.MkdirAll(fx, 0o755); err != nil {
		return err
	}
	p := func(name string) string { return filepath.Join(fx, name) }
	fix = map[string]string{
		"{run}":       p("run"),       // a trained bi-encoder run
		"{corrupt}":   p("corrupt"),   // run.json is cut short
		"{trunc}":     p("trunc"),     // the checkpoint's variables.safetensors is cut in half
		"{legacy}":    p("legacy"),    // no run.json: a run from before run.json
		"{beir}":      p("beir"),      // the embedded dataset, BEIR layout
		"{badcorpus}": p("badcorpus"), // corpus.jsonl line 5 is malformed JSON
		"{badqrels}":  p("badqrels"),  // qrels/train.tsv names tool id 9999
		"{hf}":        p("hf"),        // the run exported as a HuggingFace directory
		"{hfvocab}":   p("hfvocab"),   // the same with a 100-token vocab.txt
		"{hftrunc}":   p("hftrunc"),   // the same with model.safetensors cut in half
	}
	start = time.Now()
	if err := run(fx, filepath.Join(bin, "toolret"), "train", "biencoder", "-run", fix["{run}"], "-layers", "1", "-hidden", "16", "-heads", "2",
		"-epochs", "1", "-batch", "16", "-vocab-size", "500", "-dev", "0.85", "-test", "", "-quiet"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "clitest: trained the tiny run in %v\n", time.Since(start).Round(time.Millisecond))
	if err := run(fx, filepath.Join(bin, "toolret"), "convert", "-format", "beir", "-to", fix["{beir}"]); err != nil {
		return err
	}
	if err := run(fx, filepath.Join(bin, "toolret"), "export", "-run", fix["{run}"], "-format", "hf", "-out", fix["{hf}"]); err != nil {
		return err
	}
	for _, c := range []struct{ from, to string }{{"{run}", "{corrupt}"}, {"{run}", "{trunc}"},
		{"{run}", "{legacy}"}, {"{beir}", "{badcorpus}"}, {"{beir}", "{badqrels}"}, {"{hf}", "{hfvocab}"}, {"{hf}", "{hftrunc}"}} {
		if err := os.CopyFS(fix[c.to], os.DirFS(fix[c.from])); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(fix["{corrupt}"], "run.json"), []byte(`{"format": 1, "kind": "bienc`), 0o644); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(fix["{legacy}"], "run.json")); err != nil {
		return err
	}
	vars, err := filepath.Glob(filepath.Join(fix["{trunc}"], "checkpoints", "*", "variables.safetensors"))
	if err != nil || len(vars) == 0 {
		return fmt.Errorf("no checkpoint in %s (%v)", fix["{trunc}"], err)
	}
	for _, v := range append(vars, filepath.Join(fix["{hftrunc}"], "model.safetensors")) {
		st, err := os.Stat(v)
		if err != nil {
			return err
		}
		if err := os.Truncate(v, st.Size()/2); err != nil {
			return err
		}
	}
	if err := replaceLine(filepath.Join(fix["{badcorpus}"], "corpus.jsonl"), 5, `{"_id": "4", "text": `); err != nil {
		return err
	}
	if err := appendFile(filepath.Join(fix["{badqrels}"], "qrels", "train.tsv"), "0\t9999\t1\n"); err != nil {
		return err
	}
	// A vocab.txt longer than the model's embedding table (tokenizer.json would take precedence;
	// a shorter one is fine: deberta-v3's table has 128100 rows for 128001 tokens).
	vocab, err := os.ReadFile(filepath.Join(fix["{hf}"], "vocab.txt"))
	if err != nil {
		return err
	}
	for i := 0; i < 100; i++ {
		vocab = fmt.Appendf(vocab, "extra%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(fix["{hfvocab}"], "vocab.txt"), vocab, 0o644); err != nil {
		return err
	}
	return os.Remove(filepath.Join(fix["{hfvocab}"], "tokenizer.json"))
}

func replaceLine(path string, n int, line string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < n {
		return fmt.Errorf("%s has %d lines, want >= %d", path, len(lines), n)
	}
	lines[n-1] = line
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// A badCase runs a command (args[0], one of cmd/'s) in a fresh directory holding files, and
// expects it to fail with want in its stderr. Arguments may name the fixtures of TestMain
// ("{run}", "{beir}", ...), or a private copy of one ("{copy:run}") where a command that
// wrongly succeeded would change it. The directory is the working directory, so a -run "new"
// of a command that fails must leave no run.json there.
type badCase struct {
	name  string
	args  []string
	files map[string]string
	want  string
}

// tiny are the model sizes of training cases that validate late, so a case that wrongly
// starts training stays short.
var tiny = []string{"-layers", "1", "-hidden", "16", "-heads", "2", "-epochs", "1", "-test", "", "-quiet"}

func cmd(args ...string) []string { return args }

func with(base []string, extra ...string) []string {
	return append(append([]string(nil), base...), extra...)
}

var cases = []badCase{
	// train biencoder: flags.
	{"train/unknown-subcommand", cmd("train", "bogus"), nil, `unknown command "bogus"`},
	{"train/biencoder/epochs-0", cmd("train", "biencoder", "-run", "new", "-epochs", "0"), nil, "-epochs 0"},
	{"train/biencoder/epochs-neg", cmd("train", "biencoder", "-run", "new", "-epochs", "-1"), nil, "-epochs -1"},
	{"train/biencoder/batch-0", cmd("train", "biencoder", "-run", "new", "-batch", "0"), nil, "-batch 0"},
	{"train/biencoder/lr-0", cmd("train", "biencoder", "-run", "new", "-lr", "0"), nil, "-lr 0"},
	{"train/biencoder/dev-0", cmd("train", "biencoder", "-run", "new", "-dev", "0"), nil, "-dev 0"},
	{"train/biencoder/dev-1.5", cmd("train", "biencoder", "-run", "new", "-dev", "1.5"), nil, "-dev 1.5"},
	{"train/biencoder/temperature-0", cmd("train", "biencoder", "-run", "new", "-temperature", "0"), nil, "-temperature 0"},
	{"train/biencoder/query-len-1", cmd("train", "biencoder", "-run", "new", "-query-len", "1"), nil, "-query-len 1"},
	{"train/biencoder/lora-rank-neg", cmd("train", "biencoder", "-run", "new", "-lora-rank", "-1"), nil, "-lora-rank -1"},
	{"train/biencoder/lora-dropout-1", cmd("train", "biencoder", "-run", "new", "-lora-rank", "4", "-lora-dropout", "1"), nil, "-lora-dropout 1"},
	{"train/biencoder/lora-targets", cmd("train", "biencoder", "-run", "new", "-lora-rank", "4", "-lora-targets", "q_proj"), nil, `unknown target module "q_proj"`},
	{"train/biencoder/tool-len-0", cmd("train", "biencoder", "-run", "new", "-tool-len", "0"), nil, "-tool-len 0"},
	{"train/biencoder/metric-cutoff", cmd("train", "biencoder", "-run", "new", "-metric", "ndcg@20"), nil, `-metric "ndcg@20"`},
	{"train/biencoder/metric-typo", cmd("train", "biencoder", "-run", "new", "-metric", "ndgc@5"), nil, `-metric "ndgc@5"`},
	{"train/biencoder/warmup-1", cmd("train", "biencoder", "-run", "new", "-warmup", "1"), nil, "-warmup 1"},
	{"train/biencoder/vocab-size-0", cmd("train", "biencoder", "-run", "new", "-vocab-size", "0"), nil, "-vocab-size 0"},
	{"train/biencoder/layers-0", cmd("train", "biencoder", "-run", "new", "-layers", "0"), nil, "-layers 0"},
	{"train/biencoder/accumulate-0", cmd("train", "biencoder", "-run", "new", "-accumulate", "0"), nil, "-accumulate 0"},
	{"train/biencoder/weight-decay-neg", cmd("train", "biencoder", "-run", "new", "-weight-decay", "-1"), nil, "-weight-decay -1"},
	{"train/biencoder/hard-negatives-no-file", cmd("train", "biencoder", "-run", "new", "-hard-negatives", "2"), nil, "-negatives"},
	{"train/biencoder/unknown-flag", cmd("train", "biencoder", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"train/biencoder/positional", cmd("train", "biencoder", "-run", "new", "extra"), nil, `unexpected arguments ["extra"]`},
	{"train/biencoder/resume-no-run", cmd("train", "biencoder", "-resume"), nil, "-resume needs -run"},
	// train biencoder: files.
	{"train/biencoder/run-exists", cmd("train", "biencoder", "-run", "{copy:run}"), nil, "already holds a run"},
	{"train/biencoder/resume-changed-flag", cmd("train", "biencoder", "-resume", "-run", "{copy:run}", "-lr", "0.1"), nil, "lr 0.1 != recorded"},
	{"train/biencoder/resume-missing", cmd("train", "biencoder", "-resume", "-run", "missing"), nil, "missing"},
	{"train/biencoder/resume-corrupt-meta", cmd("train", "biencoder", "-resume", "-run", "{corrupt}"), nil, "run.json"},
	{"train/biencoder/resume-truncated", cmd("train", "biencoder", "-resume", "-run", "{trunc}", "-quiet"), nil, "variables.safetensors"},
	{"train/biencoder/resume-legacy", cmd("train", "biencoder", "-resume", "-run", "{legacy}"), nil, "train migrate"},
	{"train/biencoder/data-missing", cmd("train", "biencoder", "-run", "new", "-data", "missing"), nil, "missing"},
	{"train/biencoder/data-bad-corpus", cmd("train", "biencoder", "-run", "new", "-data", "{badcorpus}"), nil, "corpus.jsonl:5"},
	{"train/biencoder/data-bad-qrels", cmd("train", "biencoder", "-run", "new", "-data", "{badqrels}"), nil, `unknown tool id "9999"`},
	{"train/biencoder/vocab-missing", with(cmd("train", "biencoder", "-run", "new", "-vocab", "missing.txt"), tiny...), nil, "missing.txt"},
	{"train/biencoder/negatives-malformed", with(cmd("train", "biencoder", "-run", "new", "-vocab-size", "500", "-hard-negatives", "1", "-negatives", "neg.jsonl"), tiny...),
		map[string]string{"neg.jsonl": "{\"query\": \"0\", \"negatives\": [\n"}, "neg.jsonl:1"},

	// train mine.
	{"train/mine/no-run", cmd("train", "mine"), nil, "-run"},
	{"train/mine/per-query-0", cmd("train", "mine", "-run", "{run}", "-per-query", "0"), nil, "-per-query 0"},
	{"train/mine/skip-neg", cmd("train", "mine", "-run", "{run}", "-skip", "-1"), nil, "-skip -1"},
	{"train/mine/old-k-flag", cmd("train", "mine", "-run", "{run}", "-k", "5"), nil, "flag provided but not defined: -k"},
	{"train/mine/positional", cmd("train", "mine", "-run", "{run}", "extra"), nil, `unexpected arguments ["extra"]`},
	{"train/mine/split-unknown", cmd("train", "mine", "-run", "{run}", "-split", "bogus"), nil, `"bogus"`},
	{"train/mine/run-missing", cmd("train", "mine", "-run", "missing", "-out", "n.jsonl"), nil, "missing"},
	{"train/mine/run-corrupt-meta", cmd("train", "mine", "-run", "{corrupt}", "-out", "n.jsonl"), nil, "run.json"},
	{"train/mine/run-truncated", cmd("train", "mine", "-run", "{trunc}", "-out", "n.jsonl"), nil, "variables.safetensors"},
	{"train/mine/data-bad-corpus", cmd("train", "mine", "-run", "{run}", "-data", "{badcorpus}", "-out", "n.jsonl"), nil, "corpus.jsonl:5"},

	// train colt.
	{"train/colt/no-retriever", cmd("train", "colt", "-run", "new"), nil, "-first-stage"},
	{"train/colt/batch-0", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-batch", "0"), nil, "-batch 0"},
	{"train/colt/layers-neg", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-layers", "-1"), nil, "-layers -1"},
	{"train/colt/epochs-0", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-epochs", "0"), nil, "-epochs 0"},
	{"train/colt/lr-0", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-lr", "0"), nil, "-lr 0"},
	{"train/colt/temperature-0", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-temperature", "0"), nil, "-temperature 0"},
	{"train/colt/list-len-1", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-list-len", "1"), nil, "-list-len 1"},
	{"train/colt/edge-dropout-1", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-edge-dropout", "1"), nil, "-edge-dropout 1"},
	{"train/colt/views-typo", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-views", "typo"), nil, `-views "typo"`},
	{"train/colt/metric-cutoff", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-metric", "ndcg@20"), nil, `-metric "ndcg@20"`},
	{"train/colt/old-tau-flag", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-tau", "0.1"), nil, "flag provided but not defined: -tau"},
	{"train/colt/old-init-embeddings-flag", cmd("train", "colt", "-init-embeddings", "{run}", "-run", "new"), nil, "flag provided but not defined: -init-embeddings"},
	{"train/colt/positional", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "extra"), nil, `unexpected arguments ["extra"]`},
	{"train/colt/retriever-missing", cmd("train", "colt", "-first-stage", "missing", "-run", "new"), nil, "missing"},
	{"train/colt/retriever-corrupt-meta", cmd("train", "colt", "-first-stage", "{corrupt}", "-run", "new"), nil, "run.json"},
	{"train/colt/retriever-truncated", cmd("train", "colt", "-first-stage", "{trunc}", "-run", "new", "-quiet"), nil, "variables.safetensors"},
	{"train/colt/retriever-legacy", cmd("train", "colt", "-first-stage", "{legacy}", "-run", "new"), nil, "train migrate"},
	{"train/colt/resume-other-kind", cmd("train", "colt", "-resume", "-run", "{copy:run}"), nil, "not a COLT run"},
	{"train/colt/data-bad-qrels", cmd("train", "colt", "-first-stage", "{run}", "-run", "new", "-data", "{badqrels}"), nil, `unknown tool id "9999"`},

	// train crossencoder.
	{"train/crossencoder/no-retriever", cmd("train", "crossencoder", "-run", "new"), nil, "-first-stage"},
	{"train/crossencoder/batch-0", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-batch", "0"), tiny...), nil, "-batch 0"},
	{"train/crossencoder/epochs-0", cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-epochs", "0"), nil, "-epochs 0"},
	{"train/crossencoder/lr-0", cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-lr", "0"), nil, "-lr 0"},
	{"train/crossencoder/max-len-1", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-max-len", "1"), tiny...), nil, "-max-len 1"},
	{"train/crossencoder/depth-0", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-depth", "0"), tiny...), nil, "-depth 0"},
	{"train/crossencoder/negatives-0", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-negatives-per-positive", "0"), tiny...), nil, "-negatives-per-positive 0"},
	{"train/crossencoder/dev-max-neg", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-dev-max", "-1"), tiny...), nil, "-dev-max -1"},
	{"train/crossencoder/loss-typo", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-loss", "typo"), tiny...), nil, `-loss "typo"`},
	{"train/crossencoder/metric-cutoff", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-metric", "ndcg@20"), tiny...), nil, `-metric "ndcg@20"`},
	{"train/crossencoder/dev-differs", cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-dev", "0.5"), nil, "-dev 0.5"},
	{"train/crossencoder/dev-1.5", cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-dev", "1.5"), nil, "-dev 1.5"},
	{"train/crossencoder/warm-start-and-init", with(cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-warm-start", "-init", "{hf}"), tiny...), nil, "-warm-start"},
	{"train/crossencoder/unknown-flag", cmd("train", "crossencoder", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"train/crossencoder/positional", cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "extra"), nil, `unexpected arguments ["extra"]`},
	{"train/crossencoder/retriever-missing", cmd("train", "crossencoder", "-first-stage", "missing", "-run", "new"), nil, "missing"},
	{"train/crossencoder/retriever-corrupt-meta", cmd("train", "crossencoder", "-first-stage", "{corrupt}", "-run", "new"), nil, "run.json"},
	{"train/crossencoder/retriever-truncated", with(cmd("train", "crossencoder", "-first-stage", "{trunc}", "-run", "new"), tiny...), nil, "variables.safetensors"},
	{"train/crossencoder/resume-other-kind", cmd("train", "crossencoder", "-resume", "-run", "{copy:run}"), nil, "not a crossencoder run"},
	{"train/crossencoder/data-bad-corpus", cmd("train", "crossencoder", "-first-stage", "{run}", "-run", "new", "-data", "{badcorpus}"), nil, "corpus.jsonl:5"},

	// train refiner.
	{"train/refiner/no-retriever", with(cmd("train", "refiner", "-run", "new"), tiny...), nil, "-first-stage RUN is required"},
	{"train/refiner/n-0", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-n", "0"), tiny...), nil, "-n 0"},
	{"train/refiner/depth-below-n", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-n", "8", "-depth", "4"), tiny...), nil, "-depth 4"},
	{"train/refiner/candidates-typo", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-candidates", "typo"), tiny...), nil, `candidates "typo"`},
	{"train/refiner/mlc-without-run", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-candidates", "mlc"), tiny...), nil, "-candidates-run"},
	{"train/refiner/bm25-with-run", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-candidates", "bm25", "-candidates-run", "{run}"), tiny...), nil, "-candidates-run"},
	{"train/refiner/weight-2", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-first-stage-weight", "2"), tiny...), nil, "-first-stage-weight 2"},
	{"train/refiner/loss-typo", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-loss", "typo"), tiny...), nil, `loss "typo"`},
	{"train/refiner/missing-typo", with(cmd("train", "refiner", "-first-stage", "{run}", "-run", "new", "-missing", "typo"), tiny...), nil, `-missing "typo"`},
	{"train/refiner/retriever-missing", cmd("train", "refiner", "-first-stage", "missing", "-run", "new"), nil, "missing"},
	{"train/refiner/resume-other-kind", cmd("train", "refiner", "-resume", "-run", "{copy:run}"), nil, "not a refiner run"},

	// train classifier.
	{"train/classifier/kind-typo", with(cmd("train", "classifier", "-run", "new", "-kind", "typo"), tiny...), nil, `-kind "typo"`},
	{"train/classifier/loss-typo", with(cmd("train", "classifier", "-run", "new", "-loss", "typo"), tiny...), nil, `-loss "typo"`},
	{"train/classifier/querytype-metric-ndcg", with(cmd("train", "classifier", "-run", "new", "-metric", "ndcg@5"), tiny...), nil, `-metric "ndcg@5"`},
	{"train/classifier/mlc-metric-accuracy", with(cmd("train", "classifier", "-run", "new", "-kind", "mlc", "-metric", "accuracy"), tiny...), nil, `-metric "accuracy"`},
	{"train/classifier/epochs-0", cmd("train", "classifier", "-run", "new", "-epochs", "0"), nil, "-epochs 0"},
	{"train/classifier/batch-0", cmd("train", "classifier", "-run", "new", "-batch", "0"), nil, "-batch 0"},
	{"train/classifier/lr-0", cmd("train", "classifier", "-run", "new", "-lr", "0"), nil, "-lr 0"},
	{"train/classifier/dev-0", cmd("train", "classifier", "-run", "new", "-dev", "0"), nil, "-dev 0"},
	{"train/classifier/dev-1.5", cmd("train", "classifier", "-run", "new", "-dev", "1.5"), nil, "-dev 1.5"},
	{"train/classifier/max-len-1", with(cmd("train", "classifier", "-run", "new", "-max-len", "1"), tiny...), nil, "-max-len 1"},
	{"train/classifier/warm-start-no-retriever", with(cmd("train", "classifier", "-run", "new", "-warm-start"), tiny...), nil, "-warm-start"},
	{"train/classifier/positional", cmd("train", "classifier", "-run", "new", "extra"), nil, `unexpected arguments ["extra"]`},
	{"train/classifier/retriever-corrupt-meta", cmd("train", "classifier", "-first-stage", "{corrupt}", "-run", "new"), nil, "run.json"},
	{"train/classifier/data-bad-qrels", cmd("train", "classifier", "-run", "new", "-data", "{badqrels}"), nil, `unknown tool id "9999"`},

	// train migrate.
	{"train/migrate/no-run", cmd("train", "migrate"), nil, "-run"},
	{"train/migrate/positional", cmd("train", "migrate", "-run", "{copy:legacy}", "extra"), nil, `unexpected arguments ["extra"]`},
	{"train/migrate/dev-1.5", cmd("train", "migrate", "-run", "{copy:legacy}", "-dev", "1.5"), nil, "-dev 1.5"},
	{"train/migrate/has-meta", cmd("train", "migrate", "-run", "{run}"), nil, "already has run.json"},
	{"train/migrate/not-a-run", cmd("train", "migrate", "-run", "."), nil, "not a toolret run directory"},
	{"train/migrate/data-bad-corpus", cmd("train", "migrate", "-run", "{copy:legacy}", "-data", "{badcorpus}"), nil, "corpus.jsonl:5"},

	// eval.
	{"eval/cutoffs-letters", cmd("eval", "-cutoffs", "a,b"), nil, `-cutoffs "a,b"`},
	{"eval/cutoffs-0", cmd("eval", "-cutoffs", "0"), nil, `-cutoffs "0"`},
	{"eval/old-k-cutoffs", cmd("eval", "-k", "1,5"), nil, `metric cutoffs such as "1,5" are -cutoffs`},
	{"eval/method-typo", cmd("eval", "-method", "bm52"), nil, `-method "bm52"`},
	{"eval/unknown-flag", cmd("eval", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"eval/positional", cmd("eval", "extra"), nil, `unexpected arguments ["extra"]`},
	{"eval/split-unknown", cmd("eval", "-split", "bogus"), nil, `"bogus"`},
	{"eval/bm25-k1-neg", cmd("eval", "-bm25-k1", "-1"), nil, "-bm25-k1 -1"},
	{"eval/bm25-b-2", cmd("eval", "-bm25-b", "2"), nil, "-bm25-b 2"},
	{"eval/data-missing", cmd("eval", "-data", "missing"), nil, "missing"},
	{"eval/data-bad-corpus", cmd("eval", "-data", "{badcorpus}"), nil, "corpus.jsonl:5"},
	{"eval/data-bad-qrels", cmd("eval", "-data", "{badqrels}"), nil, `unknown tool id "9999"`},
	{"eval/run-missing", cmd("eval", "-run", "missing"), nil, "missing"},
	{"eval/run-truncated", cmd("eval", "-run", "{trunc}"), nil, "variables.safetensors"},
	{"eval/tool-vectors-typo", cmd("eval", "-run", "{run}", "-tool-vectors", "typo"), nil, `-tool-vectors "typo"`},
	{"eval/rerank-no-runs", cmd("eval", "-method", "rerank"), nil, "-first-stage"},
	{"eval/rerank-retriever-missing", cmd("eval", "-method", "rerank", "-first-stage", "missing", "-reranker", "missing", "-oracle-type"), nil, "missing"},
	{"eval/rerank-retriever-corrupt-meta", cmd("eval", "-method", "rerank", "-first-stage", "{corrupt}", "-reranker", "{run}", "-oracle-type"), nil, "run.json"},
	{"eval/rerank-m-seen-0", cmd("eval", "-method", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-oracle-type", "-m-seen", "0"), nil, "-m-seen 0"},
	{"eval/rerank-per-component-0", cmd("eval", "-method", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-oracle-type", "-per-component", "0"), nil, "-per-component 0"},
	{"eval/rerank-grid-m-order", cmd("eval", "-method", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-oracle-type", "-grid", "-grid-m", "30:10"), nil, `-grid-m "30:10"`},
	{"eval/rerank-grid-metric-typo", cmd("eval", "-method", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-oracle-type", "-grid", "-grid-metric", "ndgc@5"), nil, "-grid-metric"},
	{"eval/rerank-only-typo", cmd("eval", "-method", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-only", "typo"), nil, `-only "typo"`},
	{"eval/rerank-m-depth-0", cmd("eval", "-method", "rerank-m", "-first-stage", "{run}", "-reranker", "missing", "-depth", "0"), nil, "-depth 0"},
	{"eval/ablations-misuse", cmd("eval", "-ablations"), nil, "-ablations"},

	// encode.
	{"encode/no-model", cmd("encode", "-in", "in.txt"), map[string]string{"in.txt": "a\n"}, "-model"},
	{"encode/no-in", cmd("encode", "-model", "{hf}"), nil, "-in"},
	{"encode/max-len-0", cmd("encode", "-model", "{hf}", "-in", "in.txt", "-max-len", "0"), map[string]string{"in.txt": "a\n"}, "-max-len 0"},
	{"encode/max-len-1", cmd("encode", "-model", "{hf}", "-in", "in.txt", "-max-len", "1"), map[string]string{"in.txt": "a\n"}, "-max-len 1"},
	{"encode/batch-0", cmd("encode", "-model", "{hf}", "-in", "in.txt", "-batch", "0"), map[string]string{"in.txt": "a\n"}, "-batch 0"},
	{"encode/batch-neg", cmd("encode", "-model", "{hf}", "-in", "in.txt", "-batch", "-1"), map[string]string{"in.txt": "a\n"}, "-batch -1"},
	{"encode/pooling-typo", cmd("encode", "-model", "{hf}", "-in", "in.txt", "-pooling", "typo"), map[string]string{"in.txt": "a\n"}, `"typo"`},
	{"encode/unknown-flag", cmd("encode", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"encode/positional", cmd("encode", "-model", "{hf}", "-in", "in.txt", "extra"), map[string]string{"in.txt": "a\n"}, `unexpected arguments ["extra"]`},
	{"encode/in-missing", cmd("encode", "-model", "{hf}", "-in", "missing.txt"), nil, "missing.txt"},
	{"encode/in-malformed-jsonl", cmd("encode", "-model", "{hf}", "-in", "in.jsonl"), map[string]string{"in.jsonl": "{\"text\": \"a\"}\n{\"text\": \n"}, "in.jsonl:2"},
	{"encode/in-empty-text", cmd("encode", "-model", "{hf}", "-in", "in.txt"), map[string]string{"in.txt": "a text\n\nanother\n"}, "in.txt:2: empty text"},
	{"encode/in-jsonl-no-text", cmd("encode", "-model", "{hf}", "-in", "in.jsonl"), map[string]string{"in.jsonl": "{\"txt\": \"a\"}\n"}, `in.jsonl:1: object has no "text" field`},
	{"encode/model-missing", cmd("encode", "-model", "missing", "-in", "in.txt"), map[string]string{"in.txt": "a\n"}, "missing"},
	{"encode/model-is-run-dir", cmd("encode", "-model", "{run}", "-in", "in.txt"), map[string]string{"in.txt": "a\n"}, "config.json"},
	{"encode/model-truncated", cmd("encode", "-model", "{hftrunc}", "-in", "in.txt"), map[string]string{"in.txt": "a\n"}, "model.safetensors"},
	{"encode/vocab-mismatch", cmd("encode", "-model", "{hfvocab}", "-in", "in.txt"), map[string]string{"in.txt": "a\n"}, "the embedding table needs a row per token"},

	// export.
	{"export/no-run", cmd("export", "-out", "out"), nil, "-run"},
	{"export/no-out", cmd("export", "-run", "{run}"), nil, "-out"},
	{"export/format-typo", cmd("export", "-run", "{run}", "-out", "out", "-format", "typo"), nil, `-format "typo"`},
	{"export/unknown-flag", cmd("export", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"export/positional", cmd("export", "-run", "{run}", "-out", "out", "extra"), nil, `unexpected arguments ["extra"]`},
	{"export/backend-typo", cmd("export", "-run", "{run}", "-out", "out", "-backend", "typo"), nil, `"typo"`},
	{"export/out-not-empty", cmd("export", "-run", "{run}", "-out", "out"), map[string]string{"out/x": "x"}, "not empty"},
	{"export/data-without-index", cmd("export", "-run", "{run}", "-out", "out", "-data", "{beir}"), nil, "-data"},
	{"export/run-missing", cmd("export", "-run", "missing", "-out", "out"), nil, "missing"},
	{"export/run-truncated", cmd("export", "-run", "{trunc}", "-out", "out"), nil, "variables.safetensors"},
	{"export/index-bad-corpus", cmd("export", "-run", "{run}", "-out", "out", "-format", "index", "-data", "{badcorpus}"), nil, "corpus.jsonl:5"},

	// convert.
	{"convert/no-to", cmd("convert"), nil, "-to"},
	{"convert/format-typo", cmd("convert", "-to", "out", "-format", "typo"), nil, `-format "typo"`},
	{"convert/unknown-flag", cmd("convert", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"convert/positional", cmd("convert", "-to", "out", "extra"), nil, `unexpected arguments ["extra"]`},
	{"convert/out-not-empty", cmd("convert", "-to", "out"), map[string]string{"out/x": "x"}, "not empty"},
	{"convert/from-missing", cmd("convert", "-from", "missing", "-to", "out"), nil, "missing"},
	{"convert/from-bad-corpus", cmd("convert", "-from", "{badcorpus}", "-to", "out"), nil, "corpus.jsonl:5"},
	{"convert/from-bad-qrels", cmd("convert", "-from", "{badqrels}", "-to", "out"), nil, `unknown tool id "9999"`},

	// bench.
	{"bench/no-subcommand", cmd("bench"), nil, "usage: bench"},
	{"bench/unknown-subcommand", cmd("bench", "bogus"), nil, "usage: bench"},
	{"bench/encode/unknown-flag", cmd("bench", "encode", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"bench/encode/batch-0", cmd("bench", "encode", "-data", "{beir}", "-vocab", "{hf}/vocab.txt", "-backends", "go", "-python", "", "-queries", "10", "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "0"), nil, "-batch 0"},
	{"bench/encode/queries-0", cmd("bench", "encode", "-data", "{beir}", "-vocab", "{hf}/vocab.txt", "-backends", "go", "-python", "", "-queries", "0", "-layers", "1", "-hidden", "16", "-heads", "2"), nil, "-queries 0"},
	{"bench/encode/arch-typo", cmd("bench", "encode", "-data", "{beir}", "-vocab", "{hf}/vocab.txt", "-backends", "go", "-python", "", "-queries", "10", "-layers", "1", "-hidden", "16", "-heads", "2", "-arch", "bert,gpt2"), nil, `-arch "gpt2"`},
	{"bench/encode/layers-0", cmd("bench", "encode", "-data", "{beir}", "-vocab", "{hf}/vocab.txt", "-backends", "go", "-python", "", "-queries", "10", "-layers", "0", "-hidden", "16", "-heads", "2"), nil, "-layers 0"},
	{"bench/encode/positional", cmd("bench", "encode", "-data", "{beir}", "-vocab", "{hf}/vocab.txt", "-backends", "go", "-python", "", "-queries", "10", "-layers", "1", "-hidden", "16", "-heads", "2", "extra"), nil, `unexpected arguments ["extra"]`},
	{"bench/encode/data-missing", cmd("bench", "encode", "-data", "missing", "-vocab", "{hf}/vocab.txt", "-python", ""), nil, "missing"},
	{"bench/encode/vocab-missing", cmd("bench", "encode", "-data", "{beir}", "-vocab", "missing.txt", "-python", ""), nil, "missing.txt"},
	{"bench/train/unknown-flag", cmd("bench", "train", "-bogus"), nil, "flag provided but not defined: -bogus"},
	{"bench/train/batch-0", cmd("bench", "train", "-backends", "go", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "1", "-batch", "0"), nil, "-batch 0"},
	{"bench/train/steps-0", cmd("bench", "train", "-backends", "go", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "0"), nil, "-steps 0"},
	{"bench/train/vocab-10", cmd("bench", "train", "-backends", "go", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "1", "-vocab-size", "10"), nil, "-vocab-size 10"},
	{"bench/train/query-len-1", cmd("bench", "train", "-backends", "go", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "1", "-query-len", "1"), nil, "-query-len 1"},
	{"bench/train/positional", cmd("bench", "train", "extra", "-backends", "go", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "1"), nil, `unexpected arguments ["extra"`},
	{"bench/colt/batch-0", cmd("bench", "colt", "-data", "{beir}", "-scale", "1", "-batch", "0"), nil, "-batch 0"},
	{"bench/colt/scale-0", cmd("bench", "colt", "-data", "{beir}", "-scale", "0"), nil, "-scale 0"},
	{"bench/colt/dim-0", cmd("bench", "colt", "-data", "{beir}", "-scale", "1", "-dim", "0"), nil, "-dim 0"},
	{"bench/colt/positional", cmd("bench", "colt", "-data", "{beir}", "extra"), nil, `unexpected arguments ["extra"]`},
	{"bench/colt/data-bad-qrels", cmd("bench", "colt", "-data", "{badqrels}", "-scale", "1"), nil, `unknown tool id "9999"`},
	{"bench/colt/backend-typo", cmd("bench", "colt", "-data", "{beir}", "-scale", "1", "-backend", "typo"), nil, `"typo"`},
	{"bench/retrieve/queries-0", cmd("bench", "retrieve", "-data", "{beir}", "-synthetic", "0", "-layers", "1", "-hidden", "16", "-heads", "2", "-queries", "0"), nil, "-queries 0"},
	{"bench/retrieve/k-0", cmd("bench", "retrieve", "-data", "{beir}", "-synthetic", "0", "-layers", "1", "-hidden", "16", "-heads", "2", "-queries", "5", "-k", "0"), nil, "-k 0"},
	{"bench/retrieve/synthetic-neg", cmd("bench", "retrieve", "-data", "{beir}", "-synthetic", "-1", "-layers", "1", "-hidden", "16", "-heads", "2", "-queries", "5"), nil, "-synthetic -1"},
	{"bench/retrieve/positional", cmd("bench", "retrieve", "-data", "{beir}", "-synthetic", "0", "-layers", "1", "-hidden", "16", "-heads", "2", "-queries", "5", "extra"), nil, `unexpected arguments ["extra"]`},
	{"bench/retrieve/data-missing", cmd("bench", "retrieve", "-data", "missing-dir", "-synthetic", "0", "-layers", "1", "-hidden", "16", "-heads", "2", "-queries", "5"), nil, "missing-dir"},
	{"bench/retrieve/data-bad-corpus", cmd("bench", "retrieve", "-data", "{badcorpus}", "-synthetic", "0", "-layers", "1", "-hidden", "16", "-heads", "2", "-queries", "5"), nil, "corpus.jsonl:5"},
	{"bench/retrieve/run-missing", cmd("bench", "retrieve", "-run", "missing", "-data", "{beir}", "-synthetic", "0", "-queries", "5"), nil, "missing"},
	{"bench/retrieve/run-truncated", cmd("bench", "retrieve", "-run", "{trunc}", "-data", "{beir}", "-synthetic", "0", "-queries", "5"), nil, "variables.safetensors"},
	{"bench/rerank/no-runs", cmd("bench", "rerank"), nil, "-first-stage"},
	{"bench/rerank/depth-0", cmd("bench", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-depth", "0"), nil, "-depth 0"},
	{"bench/rerank/queries-0", cmd("bench", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-queries", "0"), nil, "-queries 0"},
	{"bench/rerank/positional", cmd("bench", "rerank", "-first-stage", "{run}", "-reranker", "missing", "extra"), nil, `unexpected arguments ["extra"]`},
	{"bench/rerank/reranker-missing", cmd("bench", "rerank", "-first-stage", "{run}", "-reranker", "missing", "-queries", "2"), nil, "missing"},
	{"bench/rerank/retriever-truncated", cmd("bench", "rerank", "-first-stage", "{trunc}", "-reranker", "{run}", "-queries", "2"), nil, "variables.safetensors"},
}

// TestBadInput runs every case under a timeout.
func TestBadInput(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pairs := []string{}
			for k, v := range fix {
				pairs = append(pairs, k, v)
				if strings.Contains(strings.Join(c.args, " "), "{copy:"+k[1:]) {
					cp := filepath.Join(t.TempDir(), filepath.Base(v))
					if err := os.CopyFS(cp, os.DirFS(v)); err != nil {
						t.Fatal(err)
					}
					pairs = append(pairs, "{copy:"+k[1:], cp)
				}
			}
			r := strings.NewReplacer(pairs...)
			args := make([]string, len(c.args)-1)
			for i, a := range c.args[1:] {
				args[i] = r.Replace(a)
			}
			stdout, stderr, err := runCase(t, dir, c.args[0], args)
			line := c.args[0] + " " + strings.Join(args, " ")
			var exit *exec.ExitError
			switch {
			case err == nil:
				t.Errorf("%s: exit status 0, want a failure mentioning %q\nstderr:\n%s", line, c.want, tail(stderr))
			case !errors.As(err, &exit):
				t.Errorf("%s: %v\nstderr:\n%s", line, err, tail(stderr))
			case !strings.Contains(stderr, c.want):
				t.Errorf("%s: %v; stderr does not mention %q:\n%s", line, err, c.want, tail(stderr))
			}
			for _, out := range []struct{ name, s string }{{"stdout", stdout}, {"stderr", stderr}} {
				if strings.Contains(out.s, "panic:") || strings.Contains(out.s, "goroutine ") {
					t.Errorf("%s: %s shows a panic or goroutine dump:\n%s", line, out.name, tail(out.s))
				}
			}
			// A command that fails must not leave a run directory behind (a retry would be refused).
			filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
				if err == nil && e.Name() == "run.json" {
					t.Errorf("%s: left %s behind", line, p)
				}
				return nil
			})
		})
	}
}

// runCase runs one command under caseTimeout; a command still running then fails the case.
func runCase(t *testing.T, dir, name string, args []string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "toolret"), append([]string{name}, args...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("%s %s: still running after %v (killed): a hang", name, strings.Join(args, " "), caseTimeout)
	}
	return o.String(), e.String(), err
}

// tail returns the end of a long output.
func tail(s string) string {
	const n = 2000
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
