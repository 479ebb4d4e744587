package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// UsageDB is a database that keeps the usage log (pgstore.Store: the table usage_log).
type UsageDB interface {
	// AppendUsage stores one record (UsageRecord as JSON) of kind at time at, durably when
	// it returns nil.
	AppendUsage(ctx context.Context, at time.Time, kind string, record []byte) error
}

// usageSink is where usage records go: a file (usageLog) or a database (dbUsage).
type usageSink interface {
	append(rec *UsageRecord) error
	close() error
}

// usageTimeout bounds writing one usage record to the database.
const usageTimeout = 2 * time.Second

// dbUsage writes usage records to a UsageDB, one insert each, before the request is
// answered. With a spool file, the searches and calls the database could not take wait there
// (hold) until drainLoop writes them to it.
type dbUsage struct {
	db    UsageDB
	spool string // "": none

	mu   sync.Mutex // the spool file, with lockSpool across processes
	stop chan struct{}
	done chan struct{}
}

func (u *dbUsage) append(rec *UsageRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), usageTimeout)
	defer cancel()
	return u.db.AppendUsage(ctx, rec.Time, rec.Kind, b)
}

// close stops the spool's drain (the database is the store's, closed with it).
func (u *dbUsage) close() error {
	if u.stop == nil {
		return nil
	}
	close(u.stop)
	<-u.done
	return nil
}

// ErrUsageUnavailable is feedback that the usage database could not record (HTTP 503).
var ErrUsageUnavailable = errors.New("the usage log's database could not record it")

// recordDB writes rec to the usage database, returning why not (ErrUsageUnavailable).
func (g *Gateway) recordDB(rec *UsageRecord) error {
	rec.Time = time.Now().UTC()
	if err := g.usage.append(rec); err != nil {
		g.log.Error("usage log: record lost", "kind", rec.Kind, "error", err.Error())
		return fmt.Errorf("%w: %v", ErrUsageUnavailable, err)
	}
	return nil
}
