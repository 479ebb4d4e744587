package train

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// writeFakeRun writes a run directory's metrics.jsonl (a noisy falling loss every step, a
// warm-up then linear learning rate, recall/ndcg/comp@{1,3,5,10} every evalEvery steps peaking
// at step peak) and train_config.json selecting on ndcg@5.
func writeFakeRun(t *testing.T, dir string, steps, evalEvery, peak int, seed uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for s := 1; s <= steps; s++ {
		rec := map[string]any{"step": s, "epoch": 0, "lr": 1e-3 * math.Min(float64(s)/10, float64(steps-s+1)/float64(steps))}
		rec["loss"] = 3*math.Exp(-float64(s)/40) + 0.3 + 0.2*r.NormFloat64()
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if s%evalEvery == 0 {
			var m strings.Builder
			for i, fam := range []string{"recall", "ndcg", "comp"} {
				for _, k := range []int{1, 3, 5, 10} {
					v := 20 + 10*float64(i) + 4*float64(k) - math.Abs(float64(s-peak))/float64(steps)*20
					fmt.Fprintf(&m, `,"dev_%s@%d":%g`, fam, k, v)
				}
			}
			line = []byte(strings.TrimSuffix(string(line), "}") + m.String() + "}")
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteString(`{"step": 9999, "loss": ` + "\n") // a torn last line
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"metric": "ndcg@5"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// figures returns the data-panel ids of a plot page, in order.
func figures(page string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<figure class=panel data-panel="([^"]+)"><svg class="chart"`).FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// svgTexts returns the <text> contents of a page's charts.
func svgTexts(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// legends returns the legend entries under a page's charts.
func legends(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<li><svg class=line[^>]*><line [^>]*/></svg>([^<]*)</li>`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

func hasText(texts []string, s string) bool {
	for _, t := range texts {
		if strings.TrimSpace(t) == s {
			return true
		}
	}
	return false
}

// TestPlotRun: one run's plot groups its curves (loss with its smoothing, recall/ndcg/comp@K,
// the learning rate), draws axes with tick labels and legends, and marks the best checkpoint
// (the evaluation with the highest ndcg@5 before training ends, summary.json's after).
func TestPlotRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run-a")
	writeFakeRun(t, dir, 120, 20, 60, 1)
	if err := writePlot(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, PlotFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if got, want := strings.Join(figures(page), ","), "loss,dev_recall,dev_ndcg,dev_comp,lr"; got != want {
		t.Errorf("panels %s, want %s", got, want)
	}
	texts := svgTexts(page)
	for _, s := range []string{"training loss and dev losses", "dev ndcg@K", "learning rate", "step", "loss", "ndcg (%)",
		"0", "40", "80", "120", "best: step 60, ndcg@5 50.00"} {
		if !hasText(texts, s) {
			t.Errorf("no chart text %q", s)
		}
	}
	leg := legends(page)
	for _, s := range []string{"loss", "loss (smoothed)", "recall@1", "recall@10", "ndcg@5", "comp@3", "lr", "best checkpoint"} {
		if !hasText(leg, s) {
			t.Errorf("no legend entry %q in %q", s, leg)
		}
	}
	for _, s := range []string{"<td class=best>step 60 (dev ndcg@5 50.00)</td>", "exponential moving average"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the page has a script: it must be self-contained SVG")
	}
	// summary.json, once written, is the best checkpoint.
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"best_step": 80}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePlot(dir); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, PlotFile))
	if !hasText(svgTexts(string(b)), "best: step 80, ndcg@5 46.67") {
		t.Error("the best step is not summary.json's")
	}
}

// TestPlotRuns: several runs overlaid, a color and a legend entry per run and series, each
// run's best checkpoint marked; errors name the missing run.
func TestPlotRuns(t *testing.T) {
	tmp := t.TempDir()
	a, c := filepath.Join(tmp, "a", "run"), filepath.Join(tmp, "c")
	writeFakeRun(t, a, 100, 10, 30, 1)
	writeFakeRun(t, c, 150, 25, 100, 2)
	out := filepath.Join(tmp, "cmp.html")
	if err := PlotRuns(out, a, c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if got := len(figures(page)); got != 5 {
		t.Errorf("%d panels, want 5", got)
	}
	leg := legends(page)
	for _, s := range []string{"run ndcg@5", "c ndcg@5", "run loss (smoothed)", "c loss (smoothed)", "run best", "c best"} {
		if !hasText(leg, s) {
			t.Errorf("no legend entry %q in %q", s, leg)
		}
	}
	for _, s := range []string{"<td class=best>step 30 (dev ndcg@5 50.00)</td>", "<td class=best>step 100 (dev ndcg@5 50.00)</td>",
		`stroke-dasharray="5.0 2.0"`, "ring: run's best ndcg@5; ring: c's best ndcg@5"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if n := strings.Count(page, "<tr class=run "); n != 2 {
		t.Errorf("%d runs listed, want 2", n)
	}
	// Every run's best is ringed on the ndcg chart: a ring glyph per run.
	ndcg := page[strings.Index(page, `data-panel="dev_ndcg"`):]
	ndcg = ndcg[:strings.Index(ndcg, "</figure>")]
	if n := strings.Count(ndcg, "A5,5 0 1 1"); n != 4 { // a ring is two arcs
		t.Errorf("%d ring arcs on the ndcg chart, want 2 rings", n)
	}
	if err := PlotRuns(out, a, filepath.Join(tmp, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing run: %v", err)
	}
	if err := PlotRuns(out); err == nil {
		t.Error("no runs: no error")
	}
}

// TestPanelsLibraries: a multi-source run's per-library metrics get a chart per metric, one
// line per library, apart from the pooled metric families.
func TestPanelsLibraries(t *testing.T) {
	series := map[string][]point{}
	for _, k := range []string{"loss", "lr", "dev_ndcg@5", "dev_ndcg@10", "dev_lib/toollens/ndcg@5", "dev_lib/toolmix/seal_tools/ndcg@5", "dev_lib/toollens/recall@5"} {
		series[k] = nil
	}
	got := map[string][]string{}
	for _, p := range panelsOf([]*curves{{series: series}}) {
		got[p.title] = p.keys
	}
	want := map[string][]string{
		"training loss and dev losses": {"loss"},
		"learning rate":                {"lr"},
		"dev ndcg@K":                   {"dev_ndcg@5", "dev_ndcg@10"},
		"dev ndcg@5 per library":       {"dev_lib/toollens/ndcg@5", "dev_lib/toolmix/seal_tools/ndcg@5"},
		"dev recall@5 per library":     {"dev_lib/toollens/recall@5"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("panels %v\nwant %v", got, want)
	}
}
