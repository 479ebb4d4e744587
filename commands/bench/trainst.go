package benchcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/tokenize"
)

// stPython is the sentence-transformers venv's python (make install-st).
func stPython() string { return filepath.Join(backend.CacheDir(), "venv", "bin", "python") }

// stResult is scripts/bench/st_train.py's output line.
type stResult struct {
	Seconds     float64  `json:"seconds"`
	CPUSeconds  float64  `json:"cpu_seconds"`
	PeakRSS     float64  `json:"peak_rss"`
	Threads     int      `json:"threads"`
	Torch       string   `json:"torch"`
	ST          string   `json:"st"`
	Attn        string   `json:"attn"`
	BLAS        string   `json:"blas"`
	FusedAdamW  bool     `json:"fused_adamw"`
	EncodeTPS   *float64 `json:"encode_texts_per_sec"`
	BF16Seconds *float64 `json:"bf16_seconds"`
	BF16Note    string   `json:"bf16_note"`
	MM          float64  `json:"mm_gflops"`
}

// encodeTexts are the texts bench train encodes: the first n tool texts of dataDir tokenized
// with tok to at most maxLen tokens (none when the dataset cannot be read: why says so).
func encodeTexts(dataDir string, tok *tokenize.Tokenizer, n, maxLen int) (texts []string, seqs [][]int32, why string) {
	if n <= 0 {
		return nil, nil, "-encode-texts 0"
	}
	if tok == nil {
		return nil, nil, "no vocabulary"
	}
	d, err := data.Load(dataDir)
	if err != nil {
		return nil, nil, err.Error()
	}
	for _, t := range d.Tools[:min(n, len(d.Tools))] {
		texts, seqs = append(texts, t.Text), append(seqs, tok.Single(t.Text, maxLen))
	}
	if len(texts) == 0 {
		return nil, nil, dataDir + " has no tools"
	}
	return texts, seqs, ""
}

// stRow runs st_train.py on spec with python and prints the sentence-transformers row (and a
// bf16 row when measured) and toolret's ratios to it (the bf16 rows' to the bf16 row too).
// names are toolret's rows (a backend name, "-bf16" added for bf16); tps, enc and cpu their
// tokens/s, encode texts/s and CPU seconds per step.
func stRow(python string, spec map[string]any, realTok int, flops float64, steps int, names []string, tps, enc, cpu map[string]float64, w int) error {
	const row = "sentence-transformers"
	if _, err := os.Stat(python); err != nil {
		fmt.Printf("%-*s %12s (no sentence-transformers venv: %v; make install-st)\n", w, row, "-", err)
		return fmt.Errorf("%w: %s: %v", errNotMeasured, row, err)
	}
	out, err := runTorch(python, "scripts/bench/st_train.py", "auto", spec)
	if err != nil {
		fmt.Printf("%-*s %12s (%v)\n", w, row, "-", err)
		return fmt.Errorf("%w: %s: %v", errNotMeasured, row, err)
	}
	var r stResult
	if err := json.Unmarshal(out, &r); err != nil || r.Seconds <= 0 {
		return fmt.Errorf("%s output %s: %v", row, out, err)
	}
	stTPS := float64(realTok) / r.Seconds
	gf := flops / r.Seconds / 1e9
	encS, stEnc := "-", 0.0
	if r.EncodeTPS != nil {
		stEnc = *r.EncodeTPS
		encS = fmt.Sprintf("%.1f", stEnc)
	}
	stCPU := r.CPUSeconds / float64(steps)
	fmt.Printf("%-*s %12.0f %10.3f %9.1f %12.1f %7.0f%% %10s %9.0f %10s %10.2f  (sentence-transformers %s, torch %s, %s, %d threads, attention %s, fused AdamW %v)\n",
		w, row, stTPS, r.Seconds/float64(steps), gf, r.MM, 100*gf/r.MM, "-", r.PeakRSS/(1<<20), encS, stCPU, r.ST, r.Torch, r.BLAS, r.Threads, r.Attn, r.FusedAdamW)
	if r.BF16Seconds != nil {
		bt := float64(realTok) / *r.BF16Seconds
		fmt.Printf("%-*s %12.0f %10.3f  (bf16 autocast; %s)\n", w, row+"-bf16", bt, *r.BF16Seconds/float64(steps), r.BF16Note)
		for _, name := range names {
			if strings.HasSuffix(name, "-bf16") {
				fmt.Printf("toolret-%s / %s-bf16 tokens/s: %.2fx\n", name, row, tps[name]/bt)
			}
		}
	} else {
		fmt.Printf("bf16 autocast: not measured, %s\n", r.BF16Note)
	}
	for _, name := range names {
		e := "-"
		if enc[name] > 0 && stEnc > 0 {
			e = fmt.Sprintf("%.2fx", enc[name]/stEnc)
		}
		c := "-"
		if cpu[name] > 0 && stCPU > 0 {
			c = fmt.Sprintf("%.2fx", stCPU/cpu[name])
		}
		fmt.Printf("toolret-%s / %s tokens/s: %.2fx; encode texts/s: %s; tokens per CPU second: %s\n", name, row, tps[name]/stTPS, e, c)
	}
	return nil
}

// timeEncodeRow is toolret's encode texts/s on be (0 without texts).
func timeEncodeRow(run func() (float64, error), texts int) (float64, error) {
	if texts == 0 {
		return 0, nil
	}
	sec, err := run()
	if err != nil || sec <= 0 {
		return 0, err
	}
	return float64(texts) / sec, nil
}
