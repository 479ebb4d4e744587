package progress

import (
	"strings"
	"testing"
	"time"
)

// TestBar: a log bar prints the first report only when it is the end, then at most one line per
// interval, always the last; the line has the count, the rate, the extra field and the ETA; a
// quiet bar and a nil one print nothing.
func TestBar(t *testing.T) {
	tests := []struct {
		name    string
		quiet   bool
		updates [][2]int
		want    []string // substrings, one per printed line
	}{
		{"start, middle, end", false, [][2]int{{0, 10}, {5, 10}, {10, 10}}, []string{"lists 5/10", "100% lists 10/10"}},
		{"resumed", false, [][2]int{{4, 10}, {10, 10}}, []string{"lists 10/10"}},
		{"all at once", false, [][2]int{{3, 3}}, []string{"lists 3/3"}},
		{"quiet", true, [][2]int{{0, 10}, {10, 10}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sb strings.Builder
			b := To(&sb, "lists", tt.quiet, func() string { return "extra x" })
			b.every = 0
			for _, u := range tt.updates {
				time.Sleep(time.Millisecond)
				b.Update(u[0], u[1])
			}
			b.Finish()
			lines := strings.Split(strings.TrimSpace(sb.String()), "\n")
			if len(tt.want) == 0 {
				if sb.Len() != 0 {
					t.Fatalf("printed %q", sb.String())
				}
				return
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("%d lines %q, want %d", len(lines), lines, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) || !strings.Contains(lines[i], "extra x") || !strings.Contains(lines[i], "ETA") {
					t.Errorf("line %d %q: want %q, the extra field and an ETA", i, lines[i], w)
				}
			}
			last := lines[len(lines)-1]
			if tt.updates[0][0] != tt.updates[len(tt.updates)-1][0] && (!strings.Contains(last, "/s") || !strings.HasSuffix(last, "ETA 0s")) {
				t.Errorf("last line %q: want a rate and ETA 0s", last)
			}
		})
	}
	var nilBar *Bar
	nilBar.Update(1, 2)
	nilBar.Finish()
}

// TestNote: a note is a line of its own between a log bar's lines; a quiet bar and a nil one
// print nothing.
func TestNote(t *testing.T) {
	var sb strings.Builder
	b := To(&sb, "step", false, nil)
	b.every = 0
	b.Update(0, 2)
	time.Sleep(time.Millisecond)
	b.Update(1, 2)
	b.Note("step 1 dev ndcg@5 10.00")
	b.Update(2, 2)
	lines := strings.Split(strings.TrimSpace(sb.String()), "\n")
	if len(lines) != 3 || lines[1] != "step 1 dev ndcg@5 10.00" || !strings.Contains(lines[2], "step 2/2") {
		t.Errorf("lines %q: want the bar, the note, the bar", lines)
	}
	var q strings.Builder
	To(&q, "step", true, nil).Note("x")
	var nilBar *Bar
	nilBar.Note("x")
	if q.Len() != 0 {
		t.Errorf("a quiet bar printed %q", q.String())
	}
}
