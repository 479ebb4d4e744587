package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// UsageSpoolFile is the spool's file name in the gateway's state directory: the usage
// records (searches and calls) that the usage database could not take, waiting for it.
const UsageSpoolFile = "usage-spool.jsonl"

// spoolEvery is how often records waiting in the spool are offered to the database.
const spoolEvery = 2 * time.Second

// hold appends rec to the spool file, fsynced: kept until drain writes it to the database.
func (u *dbUsage) hold(rec *UsageRecord) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	unlock, err := lockSpool(u.spool)
	if err != nil {
		return err
	}
	defer unlock()
	// Opened for each record: another replica's drain may have replaced the file since.
	sp, err := openUsage(u.spool)
	if err != nil {
		return fmt.Errorf("usage spool: %w", err)
	}
	if err := sp.append(rec); err != nil {
		sp.close()
		return fmt.Errorf("usage spool: %w", err)
	}
	return sp.close()
}

// drain writes the spooled records to the database in the order they were spooled, then
// removes the spool. When the database fails part way, the spool is replaced (atomically)
// by the records not yet written, and drain returns how many were written with the error.
// A crash between a database insert and that replacement writes those records again at the
// next drain: delivery is at least once. hold and drain take the spool's file lock, so
// replicas sharing a state directory share one spool safely.
func (u *dbUsage) drain(ctx context.Context) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	unlock, err := lockSpool(u.spool)
	if err != nil {
		return 0, err
	}
	defer unlock()
	b, err := os.ReadFile(u.spool)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(b) == 0) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("usage spool: %w", err)
	}
	lines := bytes.SplitAfter(b, []byte{'\n'})
	n := 0
	for i, line := range lines {
		rec := bytes.TrimSpace(line)
		if len(rec) == 0 {
			continue
		}
		var r UsageRecord
		if !bytes.HasSuffix(line, []byte{'\n'}) || json.Unmarshal(rec, &r) != nil {
			// A torn last line (a crash during its write): never acknowledged, dropped.
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, usageTimeout)
		err := u.db.AppendUsage(ictx, r.Time, r.Kind, rec)
		cancel()
		if err != nil {
			if werr := writeAtomic(u.spool, bytes.Join(lines[i:], nil)); werr != nil {
				return n, fmt.Errorf("usage spool: %d records written, the rest not kept: %w", n, werr)
			}
			return n, err
		}
		n++
	}
	if err := os.Remove(u.spool); err != nil {
		return n, fmt.Errorf("usage spool: %w", err)
	}
	return n, nil
}

// drainLoop offers the spool to the database every spoolEvery (first at once: records
// spooled before a restart) until stop is closed.
func (g *Gateway) drainLoop(u *dbUsage) {
	defer close(u.done)
	t := time.NewTicker(spoolEvery)
	defer t.Stop()
	for {
		if n, err := u.drain(context.Background()); n > 0 || err != nil {
			if err != nil {
				g.log.Warn("usage spool: database still unreachable; records kept for the next try", "written", n, "error", err.Error())
			} else {
				g.log.Info("usage spool: records written to the database", "written", n)
			}
		}
		select {
		case <-u.stop:
			return
		case <-t.C:
		}
	}
}

// writeAtomic replaces path by b: a temporary file beside it, fsynced, renamed.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
