package usage

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// IsDatabaseURL reports whether src names a PostgreSQL database (postgres:// or
// postgresql://) rather than a usage log file.
func IsDatabaseURL(src string) bool {
	return strings.HasPrefix(src, "postgres://") || strings.HasPrefix(src, "postgresql://")
}

// ReadDB reads the usage records that replicas sharing the PostgreSQL database at dbURL
// (`serve -database URL`) wrote to its usage_log table, oldest first. A row that does not
// decode is an error naming its id.
func ReadDB(ctx context.Context, dbURL string) ([]Record, error) {
	name := redact(dbURL)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("usage log %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT id, record FROM usage_log ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("usage log %s: %w", name, err)
	}
	defer rows.Close()
	var recs []Record
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("usage log %s: %w", name, err)
		}
		rec, err := decodeLine(b)
		if err != nil {
			return nil, fmt.Errorf("usage log %s: usage_log row %d: %w", name, id, err)
		}
		recs = append(recs, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage log %s: %w", name, err)
	}
	return recs, nil
}

// readDB is Read for a database URL, with a time limit.
func readDB(dbURL string) ([]Record, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	recs, err := ReadDB(ctx, dbURL)
	return recs, nil, err
}

// redact is dbURL without its password, for messages.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(database URL)"
	}
	return u.Redacted()
}
