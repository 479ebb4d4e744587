package train

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium returns a headless-capable Chromium on PATH, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium (or chromium-browser) on PATH: plot.html is not checked in a browser (apt-get install chromium)")
	return ""
}

// runChromium runs Chromium headless on page with args and returns its stdout and stderr.
func runChromium(t *testing.T, bin, page string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), stderr.String()
}

// TestPlotChromium renders two overlaid runs' plot.html in headless Chromium: the DOM it
// builds holds every panel's chart with its axes' tick labels, lines and legend, the console
// reports no error, and the screenshot shows both runs' colors.
func TestPlotChromium(t *testing.T) {
	bin := chromium(t)
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	writeFakeRun(t, a, 120, 20, 60, 1)
	writeFakeRun(t, b, 150, 25, 100, 2)
	page := filepath.Join(tmp, "plot.html")
	if err := PlotRuns(page, a, b); err != nil {
		t.Fatal(err)
	}
	dom, logs := runChromium(t, bin, page, "--dump-dom")
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") {
			t.Errorf("console: %s", l)
		}
	}
	figs := regexp.MustCompile(`(?s)<figure class="panel" data-panel="([^"]+)">(.*?)</figure>`).FindAllStringSubmatch(dom, -1)
	var ids []string
	for _, f := range figs {
		ids = append(ids, f[1])
		body := f[2]
		for _, want := range []string{`<svg class="chart"`, "<path ", ">step</text>", `<ul class="legend">`} {
			if !strings.Contains(body, want) {
				t.Errorf("panel %s: the browser's DOM has no %q", f[1], want)
			}
		}
		if n := len(regexp.MustCompile(`<text[^>]*>\s*[0-9][0-9.e+-]*\s*</text>`).FindAllString(body, -1)); n < 4 {
			t.Errorf("panel %s: %d numeric tick labels, want axes with ticks", f[1], n)
		}
	}
	if got := strings.Join(ids, ","); got != "loss,dev_recall,dev_ndcg,dev_comp,lr" {
		t.Fatalf("panels in the browser's DOM: %q", got)
	}
	shot := filepath.Join(tmp, "plot.png")
	runChromium(t, bin, page, "--window-size=1000,2400", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Pixels of the two runs' colors (Tableau blue and orange) drawn by the browser.
	blue, orange := count(img, 0x1f, 0x77, 0xb4), count(img, 0xff, 0x7f, 0x0e)
	t.Logf("screenshot %v: %d blue, %d orange pixels", img.Bounds().Size(), blue, orange)
	if blue < 500 || orange < 500 {
		t.Errorf("screenshot: %d blue and %d orange pixels: the runs' lines were not drawn", blue, orange)
	}
}

// count returns the pixels of img within 40 of (r, g, b) in every channel.
func count(img image.Image, r, g, b uint8) int {
	n := 0
	near := func(x uint32, y uint8) bool { d := int(x>>8) - int(y); return d > -40 && d < 40 }
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				n++
			}
		}
	}
	return n
}
