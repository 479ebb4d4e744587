package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolret/toolret/rundir"
)

// writePlot renders RUN/metrics.jsonl as RUN/plot.html: self-contained SVG charts of the
// training loss and of every dev metric against the step, written atomically.
func writePlot(runDir string) error {
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	defer f.Close()
	series := map[string][][2]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		step, _ := rec["step"].(float64)
		for k, v := range rec {
			if x, ok := v.(float64); ok && (k == "loss" || k == "lr" || strings.HasPrefix(k, "dev_")) {
				series[k] = append(series[k], [2]float64{step, x})
			}
		}
	}
	var names []string
	for k := range series {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("<!doctype html><meta charset=utf-8><title>toolret training</title><style>body{font-family:sans-serif}svg{border:1px solid #ccc;margin:6px}</style>")
	fmt.Fprintf(&b, "<h2>%s</h2>", filepath.Base(runDir))
	for _, n := range names {
		b.WriteString(chart(n, series[n]))
	}
	return rundir.WriteFile(filepath.Join(runDir, "plot.html"), []byte(b.String()))
}

func chart(name string, pts [][2]float64) string {
	const w, h, pad = 480.0, 220.0, 40.0
	if len(pts) == 0 {
		return ""
	}
	x0, x1, y0, y1 := pts[0][0], pts[0][0], pts[0][1], pts[0][1]
	for _, p := range pts {
		x0, x1, y0, y1 = math.Min(x0, p[0]), math.Max(x1, p[0]), math.Min(y0, p[1]), math.Max(y1, p[1])
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	var path strings.Builder
	for i, p := range pts {
		x := pad + (p[0]-x0)/(x1-x0)*(w-2*pad)
		y := h - pad - (p[1]-y0)/(y1-y0)*(h-2*pad)
		if i == 0 {
			fmt.Fprintf(&path, "M%.1f %.1f", x, y)
		} else {
			fmt.Fprintf(&path, " L%.1f %.1f", x, y)
		}
	}
	return fmt.Sprintf(`<svg width="%.0f" height="%.0f" xmlns="http://www.w3.org/2000/svg"><text x="%.0f" y="16" font-size="13">%s (last %.4g)</text>`+
		`<text x="4" y="%.0f" font-size="10">%.4g</text><text x="4" y="%.0f" font-size="10">%.4g</text>`+
		`<text x="%.0f" y="%.0f" font-size="10">step %.0f</text><text x="%.0f" y="%.0f" font-size="10">%.0f</text>`+
		`<path d="%s" fill="none" stroke="#1f6feb" stroke-width="1.5"/></svg>`,
		w, h, pad, name, pts[len(pts)-1][1], pad, y1, h-pad, y0, pad, h-8, x0, w-pad-30, h-8, x1, path.String())
}
