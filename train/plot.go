package train

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/toolret/toolret/rundir"
)

// PlotFile is the name of the training plot in a run directory.
const PlotFile = "plot.html"

// msgs receives the trainer's messages (the devices a step is split over, the plot's path).
var msgs io.Writer = os.Stderr

// point is one value of a curve at an optimizer step.
type point struct{ step, v float64 }

// curves are a run's training curves, read from its metrics.jsonl.
type curves struct {
	name   string             // the run, as the plot's legends name it
	series map[string][]point // "loss", "lr", "dev_ndcg@5", ...
	metric string             // the dev metric selecting the best checkpoint ("": the last)
	best   float64            // the best checkpoint's step (0: no evaluation yet)
}

// readCurves reads dir/metrics.jsonl (the loss, the learning rate and every dev metric), the
// selection metric of dir/train_config.json and the best checkpoint: summary.json's at the end
// of training, else the evaluation the trainer would have kept so far.
func readCurves(dir string) (*curves, error) {
	p := filepath.Join(dir, "metrics.jsonl")
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	defer f.Close()
	c := &curves{name: filepath.Base(filepath.Clean(dir)), series: map[string][]point{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // a torn last line of a killed run
		}
		step, _ := rec["step"].(float64)
		for k, v := range rec {
			x, ok := v.(float64) // encoding/json reads no NaN or infinity
			if !ok || !(k == "loss" || k == "lr" || strings.HasPrefix(k, "dev_")) {
				continue
			}
			c.series[k] = append(c.series[k], point{step, x})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("plot: %s: %w", p, err)
	}
	var cfg Config
	if b, err := os.ReadFile(filepath.Join(dir, ConfigFile)); err == nil && json.Unmarshal(b, &cfg) == nil {
		c.metric = cfg.Metric
	}
	var sum Summary
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil && json.Unmarshal(b, &sum) == nil && sum.BestStep > 0 {
		c.best = float64(sum.BestStep)
	} else if c.metric == "" {
		c.best = lastStep(c.series)
	} else {
		bestV := math.Inf(-1)
		for _, p := range c.series["dev_"+c.metric] {
			if p.v > bestV { // the trainer's rule: strictly better
				c.best, bestV = p.step, p.v
			}
		}
	}
	return c, nil
}

// lastStep is the last step with a dev metric.
func lastStep(series map[string][]point) float64 {
	last := 0.0
	for k, pts := range series {
		if strings.HasPrefix(k, "dev_") && len(pts) > 0 {
			last = math.Max(last, pts[len(pts)-1].step)
		}
	}
	return last
}

// at returns the value of series k at step, and whether there is one.
func (c *curves) at(k string, step float64) (float64, bool) {
	for _, p := range c.series[k] {
		if p.step == step {
			return p.v, true
		}
	}
	return 0, false
}

// panel is one chart: the series of a group of metrics (keys, without the run).
type panel struct {
	id, title, ylabel string
	keys              []string
}

// panelsOf groups the series names of every run into charts: the training loss (raw and
// smoothed) with the dev losses, the learning rate, one chart per dev metric family (recall,
// ndcg, comp: one line per cutoff K), one per metric a multi-source run reports per library
// (one line per library), and one per other dev metric.
func panelsOf(runs []*curves) []panel {
	names := map[string]bool{}
	for _, c := range runs {
		for k := range c.series {
			names[k] = true
		}
	}
	loss := panel{id: "loss", title: "training loss and dev losses", ylabel: "loss"}
	lr := panel{id: "lr", title: "learning rate", ylabel: "lr"}
	families := map[string]*panel{}
	var others []panel
	for _, k := range sortedNames(names) {
		dev, isDev := strings.CutPrefix(k, "dev_")
		switch {
		case k == "loss":
			loss.keys = append([]string{k}, loss.keys...)
		case k == "lr":
			lr.keys = []string{k}
		case isDev && strings.Contains(dev, "loss"):
			loss.keys = append(loss.keys, k)
		case isDev && strings.HasPrefix(dev, "lib/"): // a multi-source run's per-library metric
			metric := dev[strings.LastIndexByte(dev, '/')+1:]
			fam := "by library: " + metric
			if families[fam] == nil {
				families[fam] = &panel{id: "dev_lib_" + strings.ReplaceAll(metric, "@", "_"), title: "dev " + metric + " per library", ylabel: metric + " (%)"}
			}
			families[fam].keys = append(families[fam].keys, k)
		case isDev && strings.Contains(dev, "@"):
			fam, _, _ := strings.Cut(dev, "@")
			if families[fam] == nil {
				families[fam] = &panel{id: "dev_" + fam, title: "dev " + fam + "@K", ylabel: fam + " (%)"}
			}
			families[fam].keys = append(families[fam].keys, k)
		case isDev:
			others = append(others, panel{id: k, title: "dev " + dev, ylabel: dev, keys: []string{k}})
		}
	}
	var out []panel
	if len(loss.keys) > 0 {
		out = append(out, loss)
	}
	for _, fam := range []string{"recall", "ndcg", "comp"} {
		if p := families[fam]; p != nil {
			out = append(out, *p)
			delete(families, fam)
		}
	}
	for _, fam := range sortedNames(families) {
		out = append(out, *families[fam])
	}
	out = append(out, others...)
	if len(lr.keys) > 0 {
		out = append(out, lr)
	}
	for i := range out {
		sort.SliceStable(out[i].keys, func(a, b int) bool { return cutoff(out[i].keys[a]) < cutoff(out[i].keys[b]) })
	}
	return out
}

// cutoff is the K of a "dev_family@K" name (0 for a name without one), so K=10 sorts after 5.
func cutoff(k string) int {
	_, s, ok := strings.Cut(k, "@")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(s)
	return n
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writePlot renders RUN/metrics.jsonl as RUN/plot.html (PlotRuns of the run alone).
func writePlot(runDir string) error {
	return PlotRuns(filepath.Join(runDir, PlotFile), runDir)
}

// PlotRuns writes to out one HTML page charting the training runs in dirs together: per
// panel (the training loss raw and smoothed with the dev losses, each dev metric family with
// a line per cutoff, the learning rate), with axes, ticks and legends, every run's best
// checkpoint marked (a dashed line at its step, a ring on its selection metric). Several runs
// are overlaid: a color per run. The page is self-contained (inline SVG, no script) and
// written atomically.
func PlotRuns(out string, dirs ...string) error {
	if len(dirs) == 0 {
		return errors.New("plot: no run directories")
	}
	var runs []*curves
	seen := map[string]int{}
	for _, d := range dirs {
		c, err := readCurves(d)
		if err != nil {
			return err
		}
		if n := seen[c.name]; n > 0 { // two runs of one name: tell them apart
			c.name = fmt.Sprintf("%s (%d)", c.name, n+1)
		}
		seen[c.name]++
		runs = append(runs, c)
	}
	var b strings.Builder
	title := runs[0].name
	if len(runs) > 1 {
		title = fmt.Sprintf("%d runs", len(runs))
	}
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>toolret training: %s</title>\n", html.EscapeString(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:16px;color:#222}figure{margin:8px 0}figcaption{font-size:13px;color:#555}" +
		"table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:left}.swatch{display:inline-block;width:12px;height:12px;margin-right:4px}" +
		".legend{list-style:none;padding:0;margin:2px 0 4px 48px;font-size:13px;color:#222}.legend li{display:inline-block;margin-right:14px}" +
		".legend .line{vertical-align:middle;margin-right:5px}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>toolret training: %s</h1>\n<table class=runs><tr><th>run</th><th>steps</th><th>best checkpoint</th></tr>\n", html.EscapeString(title))
	for i, c := range runs {
		col := runColor(i, len(runs))
		best := "none yet"
		if c.best > 0 {
			best = fmt.Sprintf("step %.0f", c.best)
			if v, ok := c.at("dev_"+c.metric, c.best); ok && c.metric != "" {
				best += fmt.Sprintf(" (dev %s %.2f)", c.metric, v)
			}
		}
		fmt.Fprintf(&b, "<tr class=run data-run=\"%s\"><td><span class=swatch style=\"background:%s\"></span>%s</td><td>%.0f</td><td class=best>%s</td></tr>\n",
			html.EscapeString(c.name), hexColor(col), html.EscapeString(dirs[i]), maxStep(c), best)
	}
	b.WriteString("</table>\n")
	panels := panelsOf(runs)
	if len(panels) == 0 {
		b.WriteString("<p class=empty>No metrics logged yet.</p>\n")
	}
	last := 0.0
	for _, c := range runs {
		last = math.Max(last, maxStep(c))
	}
	for _, p := range panels {
		svg, legend, err := renderPanel(p, runs, last)
		if err != nil {
			return fmt.Errorf("plot %s: %s: %w", out, p.title, err)
		}
		fmt.Fprintf(&b, "<figure class=panel data-panel=\"%s\">%s<figcaption><ul class=legend>", html.EscapeString(p.id), svg)
		for _, e := range legend {
			fmt.Fprintf(&b, "<li>%s%s</li>", e.swatch(), html.EscapeString(e.label))
		}
		fmt.Fprintf(&b, "</ul>%s</figcaption></figure>\n", caption(p, runs))
	}
	b.WriteString("</body></html>\n")
	if err := rundir.WriteFile(out, []byte(b.String())); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func maxStep(c *curves) float64 {
	m := 0.0
	for _, pts := range c.series {
		if len(pts) > 0 {
			m = math.Max(m, pts[len(pts)-1].step)
		}
	}
	return m
}

// caption says what a panel draws.
func caption(p panel, runs []*curves) string {
	var s []string
	if p.id == "loss" {
		s = append(s, fmt.Sprintf("training loss per step (light) and smoothed (exponential moving average, weight %.2g)", smoothing))
	}
	if strings.HasPrefix(p.id, "dev_") || p.id == "loss" {
		s = append(s, "dashed vertical lines: each run's best checkpoint")
	}
	for _, c := range runs {
		if c.metric != "" && p.id == "dev_"+strings.Split(c.metric, "@")[0] {
			s = append(s, fmt.Sprintf("ring: %s's best %s", html.EscapeString(c.name), c.metric))
		}
	}
	return strings.Join(s, "; ")
}
