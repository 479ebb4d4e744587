package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Library documents: the tool gateway keeps its library (every tool's definition) in the
// same database, so that replicas serve the same definitions (gateway.LibraryDB).

// LibrarySum returns the sha256 of the gateway library stored ("" : none yet).
func (p *Store) LibrarySum(ctx context.Context) (string, error) {
	if err := p.Err(); err != nil {
		return "", err
	}
	var sum string
	err := p.pool.QueryRow(ctx, "SELECT sha256 FROM gateway_library").Scan(&sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return sum, p.wrap("gateway library", err)
}

// LoadLibrary returns the gateway library stored and its sha256 (nil, "": none yet).
func (p *Store) LoadLibrary(ctx context.Context) (body []byte, sum string, err error) {
	if err := p.Err(); err != nil {
		return nil, "", err
	}
	err = p.pool.QueryRow(ctx, "SELECT body, sha256 FROM gateway_library").Scan(&body, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", nil
	}
	return body, sum, p.wrap("gateway library", err)
}

// StoreLibrary stores body as the gateway library and notifies the replicas; with
// ifNone, only when none is stored yet (the first replica seeds it). It returns the
// sha256 of body.
func (p *Store) StoreLibrary(ctx context.Context, body []byte, ifNone bool) (string, error) {
	if err := p.Err(); err != nil {
		return "", err
	}
	h := sha256.Sum256(body)
	sum := hex.EncodeToString(h[:])
	conflict := "DO UPDATE SET body = excluded.body, sha256 = excluded.sha256, updated_at = now(), updated_by = excluded.updated_by"
	if ifNone {
		conflict = "DO NOTHING"
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return "", p.wrap("gateway library", err)
	}
	defer tx.Rollback(context.Background())
	tag, err := tx.Exec(ctx, "INSERT INTO gateway_library (body, sha256, updated_by) VALUES ($1, $2, $3) ON CONFLICT (id) "+conflict, body, sum, p.name)
	if err != nil {
		return "", p.wrap("gateway library", err)
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, 'library')", Channel); err != nil {
			return "", p.wrap("gateway library", err)
		}
	}
	return sum, p.wrap("gateway library", tx.Commit(ctx))
}
