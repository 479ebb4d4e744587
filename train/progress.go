package train

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// progress is a terminal progress bar with loss, rate and ETA. On a terminal it redraws one
// line; otherwise (logs, CI) it prints a line every 10 seconds.
type progress struct {
	total, done int
	start       time.Time
	last        time.Time
	tty, quiet  bool
	startDone   int
}

func newProgress(total int, quiet bool) *progress {
	fi, err := os.Stderr.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	return &progress{total: total, start: time.Now(), tty: tty, quiet: quiet}
}

func (p *progress) update(done int, loss, rate float64) {
	if p.quiet {
		return
	}
	if p.startDone == 0 && p.done > 0 {
		p.startDone = p.done
	}
	p.done = done
	now := time.Now()
	if !p.tty && now.Sub(p.last) < 10*time.Second && done != p.total {
		return
	}
	p.last = now
	frac := float64(done) / float64(max(p.total, 1))
	eta := "?"
	if d := done - p.startDone; d > 0 {
		left := time.Duration(float64(now.Sub(p.start)) / float64(d) * float64(p.total-done))
		eta = left.Round(time.Second).String()
	}
	const width = 30
	n := int(frac * width)
	bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
	line := fmt.Sprintf("[%s] %3.0f%% step %d/%d loss %.4f %.1f ex/s ETA %s", bar, frac*100, done, p.total, loss, rate, eta)
	if p.tty {
		fmt.Fprintf(os.Stderr, "\r%s\033[K", line)
	} else {
		fmt.Fprintln(os.Stderr, line)
	}
}

func (p *progress) note(s string) {
	if p.quiet {
		return
	}
	if p.tty {
		fmt.Fprintf(os.Stderr, "\r\033[K%s\n", s)
	} else {
		fmt.Fprintln(os.Stderr, s)
	}
}

func (p *progress) finish() {
	if !p.quiet && p.tty {
		fmt.Fprintln(os.Stderr)
	}
}
