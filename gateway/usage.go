package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/usage"
)

// UsageRecord is one line of the usage log: a search (the query and the tools shown), a
// call (the tool called and its outcome) or feedback on a result (report_result,
// POST /v1/feedback). Package usage reads the log and turns it into training examples.
type UsageRecord = usage.Record

// usageLog appends records to a file, one JSON line each, fsynced before the request is
// answered: a record acknowledged survives a crash; a torn last line is the only damage a
// crash can leave, and readers skip it (usage.Read).
type usageLog struct {
	mu sync.Mutex
	f  *os.File
}

func openUsage(path string) (*usageLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage log: %w", err)
	}
	// A torn last line (a crash during a write) must not swallow the next record.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		b := make([]byte, 1)
		r, _ := os.Open(path)
		if r != nil {
			if _, err := r.ReadAt(b, st.Size()-1); err == nil && b[0] != '\n' {
				f.Write([]byte{'\n'})
			}
			r.Close()
		}
	}
	return &usageLog{f: f}, nil
}

func (u *usageLog) append(rec *UsageRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		return errors.New("usage log closed")
	}
	if _, err := u.f.Write(b); err != nil {
		return err
	}
	return u.f.Sync()
}

func (u *usageLog) close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		return nil
	}
	err := u.f.Close()
	u.f = nil
	return err
}

// record appends rec to the usage log, if there is one; a failure is logged, not answered.
func (g *Gateway) record(rec *UsageRecord) {
	if g.usage == nil {
		return
	}
	rec.Time = time.Now().UTC()
	err := g.usage.append(rec)
	if err == nil {
		return
	}
	if du, ok := g.usage.(*dbUsage); ok && du.spool != "" {
		serr := du.hold(rec)
		if serr == nil {
			g.log.Warn("usage log: database unreachable; record spooled until it is back", "kind", rec.Kind, "spool", du.spool, "error", err.Error())
			return
		}
		err = fmt.Errorf("%w (and the spool: %v)", err, serr)
	}
	g.log.Error("usage log: record lost", "kind", rec.Kind, "error", err.Error())
}

func newSearchID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (g *Gateway) logSearch(query string, k int, f *Filters, res *SearchResult, key string) {
	if g.usage == nil {
		return
	}
	rec := &UsageRecord{Kind: "search", Key: key, SearchID: res.SearchID, Query: query, K: k, Shown: make([]string, len(res.Tools))}
	if !f.empty() {
		rec.Filters = &usage.Filters{Server: f.Server, Namespace: f.Namespace, Tags: f.Tags}
	}
	for i, d := range res.Tools {
		rec.Shown[i] = d.Name
	}
	g.record(rec)
}

func (g *Gateway) logCall(tool, key, searchID string, res *mcp.CallToolResult, err error, start time.Time) {
	if g.usage == nil {
		return
	}
	rec := &UsageRecord{Kind: "call", Key: key, SearchID: searchID, Tool: tool, MS: time.Since(start).Milliseconds()}
	var ae *ArgumentError
	switch {
	case errors.Is(err, ErrUnknownTool):
		rec.Outcome = "unknown_tool"
	case errors.As(err, &ae):
		rec.Outcome, rec.Detail = "invalid_arguments", clip(err.Error(), 300)
	case err != nil:
		rec.Outcome, rec.Detail = "error", clip(err.Error(), 300)
	case res != nil && res.IsError:
		rec.Outcome, rec.Detail = "tool_error", clip(resultText(res), 300)
	default:
		rec.Outcome = "ok"
	}
	g.record(rec)
}

// Feedback records an agent's report on tool's result: success or failure, with a note,
// for the search searchID or the query (either may be empty).
func (g *Gateway) Feedback(tool, searchID, query string, success bool, note, key string) error {
	if tool == "" {
		return errors.New(`"tool" is empty: name the tool reported on`)
	}
	if _, ok := g.Tool(tool); !ok {
		return fmt.Errorf("%w %q in the library", ErrUnknownTool, tool)
	}
	if g.usage == nil {
		return errors.New("the gateway keeps no usage log")
	}
	rec := &UsageRecord{Kind: "feedback", Key: key, SearchID: searchID, Query: query, Tool: tool, Outcome: "failure", Detail: clip(note, 1000)}
	if success {
		rec.Outcome = "success"
	}
	if t, ok := g.Tool(tool); ok {
		rec.Tool = t.ID()
	}
	if _, db := g.usage.(*dbUsage); db {
		return g.recordDB(rec) // the database may be down: say so (503) rather than lose it
	}
	g.record(rec)
	return nil
}
