package train

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// smoothing is the weight of the training loss's exponential moving average (debiased, as
// TensorBoard smooths).
const smoothing = 0.9

// maxRaw bounds the points of a raw loss line (a longer one is thinned evenly).
const maxRaw = 4000

// palette is Tableau 10: a color per run when several are overlaid, else per line.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// dashes tell a run's lines apart when color names the run.
var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(2)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}

func runColor(run, runs int) color.RGBA {
	if runs == 1 {
		return palette[0]
	}
	return palette[run%len(palette)]
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// light is c half transparent (non-premultiplied: color.RGBA is premultiplied).
func light(c color.RGBA) color.NRGBA { return color.NRGBA{c.R, c.G, c.B, 0x80} }

func xys(pts []point) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i].X, out[i].Y = p.step, p.v
	}
	return out
}

// smooth returns the debiased exponential moving average of pts.
func smooth(pts []point) []point {
	out := make([]point, len(pts))
	avg, norm := 0.0, 0.0
	for i, p := range pts {
		avg = smoothing*avg + (1-smoothing)*p.v
		norm = smoothing*norm + (1 - smoothing)
		out[i] = point{p.step, avg / norm}
	}
	return out
}

// thin keeps at most maxRaw evenly spaced points of pts, the last included.
func thin(pts []point) []point {
	if len(pts) <= maxRaw {
		return pts
	}
	out := make([]point, 0, maxRaw+1)
	for i := 0; i < maxRaw; i++ {
		out = append(out, pts[i*len(pts)/maxRaw])
	}
	return append(out, pts[len(pts)-1])
}

// legendEntry is one line of a panel's legend (written in HTML under the chart, where it
// hides no data).
type legendEntry struct {
	label  string
	color  color.Color
	dashes []vg.Length
}

// renderPanel draws panel p of runs as an SVG element, every panel over the same steps
// (0 to maxStep), and returns its legend.
func renderPanel(p panel, runs []*curves, maxStep float64) (string, []legendEntry, error) {
	pl := plot.New()
	pl.Title.Text = p.title
	pl.X.Label.Text = "step"
	pl.Y.Label.Text = p.ylabel
	pl.X.Min, pl.X.Max = 0, math.Max(maxStep, 1)*1.03 // room for the last tick's label
	pl.Add(plotter.NewGrid())
	multi := len(runs) > 1
	var legend []legendEntry
	add := func(label string, col color.Color, d []vg.Length) {
		legend = append(legend, legendEntry{label, col, d})
	}
	var marks []func() error // drawn last, once the axes' ranges are known
	for ri, c := range runs {
		for si, k := range p.keys {
			pts := c.series[k]
			if len(pts) == 0 {
				continue
			}
			col := runColor(ri, len(runs))
			if !multi {
				col = palette[si%len(palette)]
			}
			label := strings.TrimPrefix(k, "dev_")
			if p.id == "loss" && k != "loss" { // a dev loss beside the training loss
				label = "dev " + label
			}
			if multi {
				label = c.name + " " + label
			}
			if k == "loss" {
				raw, err := plotter.NewLine(xys(thin(pts)))
				if err != nil {
					return "", nil, err
				}
				raw.Color, raw.Width = light(col), vg.Points(1)
				sm, err := plotter.NewLine(xys(smooth(pts)))
				if err != nil {
					return "", nil, err
				}
				sm.Color, sm.Width = col, vg.Points(1.6)
				pl.Add(raw, sm)
				if !multi {
					add("loss", light(col), nil)
				}
				add(label+" (smoothed)", col, nil)
				continue
			}
			ln, dots, err := plotter.NewLinePoints(xys(pts))
			if err != nil {
				return "", nil, err
			}
			ln.Color, ln.Width = col, vg.Points(1.4)
			if multi {
				ln.Dashes = dashes[si%len(dashes)]
			}
			dots.Color, dots.Radius, dots.Shape = col, vg.Points(1.8), draw.CircleGlyph{}
			if k == "lr" || len(pts) > 60 {
				pl.Add(ln)
			} else {
				pl.Add(ln, dots)
			}
			add(label, col, ln.Dashes)
		}
		if c.best <= 0 || p.id == "lr" {
			continue
		}
		col := runColor(ri, len(runs))
		if v, ok := c.at("dev_"+c.metric, c.best); ok && c.metric != "" && contains(p.keys, "dev_"+c.metric) {
			ring, err := plotter.NewScatter(plotter.XYs{{X: c.best, Y: v}})
			if err != nil {
				return "", nil, err
			}
			ring.Shape, ring.Radius, ring.Color = draw.RingGlyph{}, vg.Points(5), color.RGBA{0, 0, 0, 0xff}
			pl.Add(ring)
			if !multi { // several runs' labels would collide: the table above names each best
				lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: c.best, Y: v}}, Labels: []string{fmt.Sprintf("best: step %.0f, %s %.2f", c.best, c.metric, v)}})
				if err != nil {
					return "", nil, err
				}
				lab.Offset = vg.Point{X: vg.Points(7), Y: vg.Points(-14)}
				if c.best > maxStep/2 { // left of the ring, inside the axes
					lab.TextStyle[0].XAlign = text.XRight
					lab.Offset.X = -lab.Offset.X
				}
				pl.Add(lab)
			}
		}
		marks = append(marks, func() error {
			ln, err := plotter.NewLine(plotter.XYs{{X: c.best, Y: pl.Y.Min}, {X: c.best, Y: pl.Y.Max}})
			if err != nil {
				return err
			}
			ln.Color, ln.Width, ln.Dashes = col, vg.Points(1), []vg.Length{vg.Points(3), vg.Points(3)}
			pl.Add(ln)
			if ri == 0 || multi {
				name := "best checkpoint"
				if multi {
					name = c.name + " best"
				}
				add(name, col, ln.Dashes)
			}
			return nil
		})
	}
	for _, m := range marks {
		if err := m(); err != nil {
			return "", nil, err
		}
	}
	cv := vgsvg.New(7.5*vg.Inch, 3.2*vg.Inch)
	pl.Draw(draw.New(cv))
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return "", nil, err
	}
	svg := buf.String()
	if i := strings.Index(svg, "<svg"); i >= 0 { // drop the XML declaration: the SVG is inline
		svg = svg[i:]
	}
	return strings.Replace(svg, "<svg ", fmt.Sprintf(`<svg class="chart" role="img" aria-label="%s" `, p.title), 1), legend, nil
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// cssColor writes c for a style attribute, its transparency included.
func cssColor(c color.Color) string {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	if n.A == 0xff {
		return hexColor(color.RGBA(n))
	}
	return fmt.Sprintf("rgba(%d,%d,%d,%.2f)", n.R, n.G, n.B, float64(n.A)/255)
}

// swatch is a legend entry's line as a small inline SVG.
func (e legendEntry) swatch() string {
	var d []string
	for _, x := range e.dashes {
		d = append(d, fmt.Sprintf("%.1f", float64(x)))
	}
	dash := ""
	if len(d) > 0 {
		dash = fmt.Sprintf(` stroke-dasharray="%s"`, strings.Join(d, " "))
	}
	return fmt.Sprintf(`<svg class=line width="24" height="8"><line x1="0" y1="4" x2="24" y2="4" stroke="%s" stroke-width="2"%s/></svg>`, cssColor(e.color), dash)
}
