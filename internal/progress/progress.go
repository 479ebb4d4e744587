// Package progress is the progress bar of long work over a count (queries, lists, files): done
// of total, a rate-based ETA and an optional extra field. On a terminal it redraws one line;
// otherwise (logs, CI) it prints a line every 10 seconds and at the end.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar is a progress bar. A nil *Bar and a quiet one print nothing.
type Bar struct {
	what    string
	quiet   bool
	tty     bool
	w       io.Writer
	extra   func() string
	start   time.Time
	last    time.Time
	first   int
	started bool
	every   time.Duration
}

// New returns a bar over what (e.g. "queries") writing to standard error; extra, when not nil,
// adds a field after the count (e.g. requests made).
func New(what string, quiet bool, extra func() string) *Bar {
	fi, err := os.Stderr.Stat()
	return &Bar{what: what, quiet: quiet, tty: err == nil && fi.Mode()&os.ModeCharDevice != 0, w: os.Stderr,
		extra: extra, start: time.Now(), every: 10 * time.Second}
}

// To returns a bar like New's writing to w as to a log (a line every 10 seconds and at the end).
func To(w io.Writer, what string, quiet bool, extra func() string) *Bar {
	return &Bar{what: what, quiet: quiet, w: w, extra: extra, start: time.Now(), every: 10 * time.Second}
}

// Update reports done of total. The ETA is measured from the first update, so work finished
// before (a resumed run) does not count as speed.
func (b *Bar) Update(done, total int) {
	if b == nil || b.quiet {
		return
	}
	if !b.started {
		b.started, b.first, b.start = true, done, time.Now()
		if done != total {
			return
		}
	}
	now := time.Now()
	if !b.tty && now.Sub(b.last) < b.every && done != total {
		return
	}
	b.last = now
	frac := float64(done) / float64(max(total, 1))
	eta, rate := "?", ""
	if n := done - b.first; n > 0 {
		el := now.Sub(b.start)
		eta = time.Duration(float64(el) / float64(n) * float64(total-done)).Round(time.Second).String()
		if el > 0 {
			rate = fmt.Sprintf(" %.1f/s", float64(n)/el.Seconds())
		}
	}
	const width = 30
	k := min(int(frac*width), width)
	line := fmt.Sprintf("[%s] %3.0f%% %s %d/%d%s", strings.Repeat("=", k)+strings.Repeat(" ", width-k), frac*100, b.what, done, total, rate)
	if b.extra != nil {
		if x := b.extra(); x != "" {
			line += " " + x
		}
	}
	line += " ETA " + eta
	if b.tty {
		fmt.Fprintf(b.w, "\r%s\033[K", line)
	} else {
		fmt.Fprintln(b.w, line)
	}
}

// Note prints s on a line of its own (on a terminal, over the bar, which the next Update
// redraws).
func (b *Bar) Note(s string) {
	if b == nil || b.quiet {
		return
	}
	if b.tty {
		fmt.Fprintf(b.w, "\r\033[K%s\n", s)
	} else {
		fmt.Fprintln(b.w, s)
	}
}

// Finish ends a terminal bar's line.
func (b *Bar) Finish() {
	if b != nil && !b.quiet && b.tty && b.started {
		fmt.Fprintln(b.w)
	}
}
