package traincmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchDeberta trains tiny DeBERTa models from scratch with -arch deberta (bi-encoder,
// cross-encoder, classifier, and a cross-encoder warm-started from the DeBERTa bi-encoder)
// and checks the stored encoders and that the losses fall; -arch naming another architecture
// than the encoder taken from elsewhere is refused.
func TestArchDeberta(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	tiny := []string{"-arch", "deberta", "-layers", "1", "-hidden", "32", "-heads", "2", "-quiet"}
	if err := biencoderCmd(append([]string{"-run", be, "-epochs", "2", "-batch", "16", "-vocab-size", "1200", "-test", "", "-dev", "0.85", "-seed", "7"}, tiny...)); err != nil {
		t.Fatal(err)
	}
	checkLossFalls(t, be, 0.9)
	if e := encoderOf(t, be, "biencoder.json"); e["model_type"] != "deberta-v2" || e["relative_attention"] != true || e["position_buckets"] != 32.0 || e["type_vocab_size"] != 0.0 {
		t.Errorf("bi-encoder encoder %v", e)
	}
	for _, tc := range []struct {
		name string
		args []string
		file string
		frac float64
	}{
		{"crossencoder", []string{"crossencoder", "-depth", "10", "-loss", "bce", "-negatives-per-positive", "3", "-max-len", "64", "-batch", "8", "-epochs", "2", "-lr", "1e-3", "-dev-max", "20", "-test", ""}, "crossencoder.json", 0.95},
		{"querytype", []string{"classifier", "-kind", "querytype", "-batch", "16", "-epochs", "6", "-lr", "2e-3", "-test", ""}, "classifier.json", 0.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, tc.name)
			args := append(append([]string{"-first-stage", be, "-run", run}, tc.args[1:]...), tiny...)
			var err error
			if tc.args[0] == "crossencoder" {
				err = crossencoderCmd(args)
			} else {
				err = classifierCmd(args)
			}
			if err != nil {
				t.Fatal(err)
			}
			e := encoderOf(t, run, tc.file)
			wantTypes := map[bool]float64{true: 2, false: 0}[tc.args[0] == "crossencoder"] // pairs need token types
			if e["model_type"] != "deberta-v2" || e["type_vocab_size"] != wantTypes {
				t.Errorf("%s encoder %v", tc.name, e)
			}
			if p := poolingOf(t, run, tc.file); p != "pooler" { // HF's DebertaV2ForSequenceClassification head
				t.Errorf("%s head pooling %q, want pooler (the default over DeBERTa)", tc.name, p)
			}
			checkLossFalls(t, run, tc.frac)
		})
	}
	// Warm start from the DeBERTa retriever: its encoder, whatever -arch defaults to.
	warm := filepath.Join(dir, "warm")
	if err := classifierCmd([]string{"-kind", "querytype", "-warm-start", "-first-stage", be, "-run", warm, "-epochs", "1", "-batch", "16", "-test", "", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	if e := encoderOf(t, warm, "classifier.json"); e["model_type"] != "deberta-v2" {
		t.Errorf("warm-started encoder %v", e)
	}
	if p := poolingOf(t, warm, "classifier.json"); p != "pooler" { // a new ContextPooler over the retriever's encoder
		t.Errorf("warm-started head pooling %q, want pooler", p)
	}
	for _, tc := range []struct {
		run  func() error
		want string
	}{
		{func() error {
			return classifierCmd([]string{"-kind", "querytype", "-warm-start", "-arch", "bert", "-first-stage", be, "-run", filepath.Join(dir, "x1"), "-quiet"})
		}, "-arch bert: the -first-stage run has a deberta-v2 encoder"},
		{func() error { return biencoderCmd([]string{"-arch", "xlnet", "-run", filepath.Join(dir, "x2")}) }, `-arch "xlnet"`},
		{func() error {
			return classifierCmd([]string{"-pooling", "max", "-first-stage", be, "-run", filepath.Join(dir, "x4")})
		}, `-pooling "max": want cls, mean or pooler`},
		{func() error {
			return crossencoderCmd([]string{"-pooling", "mean", "-first-stage", be, "-run", filepath.Join(dir, "x5")})
		}, `-pooling "mean": a cross-encoder's head reads the pair's first token`},
		{func() error {
			return crossencoderCmd([]string{"-arch", "gpt", "-first-stage", be, "-run", filepath.Join(dir, "x3")})
		}, `-arch "gpt"`},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error containing %q, got %v", tc.want, err)
		}
	}
}

// encoderOf returns the "encoder" object of a run's model configuration file.
func encoderOf(t *testing.T, run, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Encoder map[string]any `json:"encoder"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Encoder
}

// poolingOf returns the head pooling stored in a run's model configuration file.
func poolingOf(t *testing.T, run, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Pooling string `json:"pooling"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Pooling
}

// TestArchWordbag trains a tiny word-bag bi-encoder from scratch (-arch wordbag): the loss
// falls, the stored encoder is a word bag of -hidden width with no layers; cross-encoders, cls
// pooling and MLM pre-training refuse it, contrastive pre-training takes it.
func TestArchWordbag(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	if err := biencoderCmd([]string{"-run", be, "-arch", "wordbag", "-hidden", "48", "-epochs", "2", "-batch", "16", "-lr", "1e-3",
		"-vocab-size", "1200", "-tool-len", "128", "-test", "", "-dev", "0.85", "-seed", "7", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	checkLossFalls(t, be, 0.9)
	if e := encoderOf(t, be, "biencoder.json"); e["model_type"] != "wordbag" || e["hidden_size"] != 48.0 || e["max_position_embeddings"] != 128.0 || e["num_hidden_layers"] != nil {
		t.Errorf("encoder %v", e)
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"cross-encoder", func() error {
			return crossencoderCmd([]string{"-arch", "wordbag", "-first-stage", be, "-run", filepath.Join(dir, "ce"), "-quiet"})
		}, "wordbag"},
		{"cls pooling", func() error {
			return biencoderCmd([]string{"-arch", "wordbag", "-pooling", "cls", "-hidden", "16", "-epochs", "1", "-run", filepath.Join(dir, "cls"), "-quiet"})
		}, "cls pooling"},
		{"mlm", func() error {
			return pretrainCmd([]string{"-arch", "wordbag", "-hidden", "16", "-run", filepath.Join(dir, "pt"), "-quiet"})
		}, "use -objective contrastive"},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s over a word bag: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := pretrainCmd([]string{"-arch", "wordbag", "-objective", "contrastive", "-hidden", "16", "-epochs", "1", "-run", filepath.Join(dir, "pt2"), "-quiet"}); err != nil {
		t.Errorf("contrastive pre-training of a word bag: %v", err)
	}
}
