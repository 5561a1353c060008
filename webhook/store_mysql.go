package webhook

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"time"

	"github.com/holdfast/holdfast/internal/sqltext"
)

//go:embed sql/mysql/*.sql
var mysqlFiles embed.FS

var mysqlStatements = sqltext.Load("webhook", mysqlFiles, "sql/mysql")

// mysqlStmt returns an embedded MySQL statement with its sqlcommenter
// comment.
func mysqlStmt(name string) string { return mysqlStatements.Tagged("webhooks", name) }

var (
	myEndpointCount  = mysqlStmt("endpoint_count")
	myEndpointLock   = mysqlStmt("endpoint_lock")
	myEndpointHead   = mysqlStmt("endpoint_head")
	myEndpointUnlock = mysqlStmt("endpoint_unlock")
	myEndpointInsert = mysqlStmt("endpoint_insert")
	myEndpointGet    = mysqlStmt("endpoint_get")
	myEndpointDelete = mysqlStmt("endpoint_delete")
	myEndpointDead   = mysqlStmt("endpoint_dead_count")
	myEndpointList   = mysqlStmt("endpoint_list")
	myDeadLetters    = mysqlStmt("dead_letters")
	myLeaseDue       = mysqlStmt("lease_due")
	myLease          = mysqlStmt("lease")
	myUnlease        = mysqlStmt("unlease")
	myDelivered      = mysqlStmt("delivered")
	myFailed         = mysqlStmt("failed")
	myFailedPast     = mysqlStmt("failed_past")
	myDeadLetter     = mysqlStmt("dead_letter")
	myDeadLetterSkip = mysqlStmt("dead_letter_skip")
)

// myStore is the store in MySQL/MariaDB. Where PostgreSQL answers with one
// statement (RETURNING, writable CTEs), it runs a short transaction.
type myStore struct{ db *sql.DB }

// inTx runs fn in a transaction at READ COMMITTED, set explicitly: the
// server's default (REPEATABLE READ in InnoDB) takes gap locks on the
// endpoints' index that would serialize leasing and registering.
func (s myStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return inTxOn(ctx, s.db, fn)
}

// inTxOn is inTx on a pool or one connection.
func inTxOn(ctx context.Context, db interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dst ...any) error }

func scanMyEndpoint(row scanner, withDead bool) (*Endpoint, error) {
	var ep Endpoint
	var next sql.NullTime
	var lastErr sql.NullString
	dst := []any{&ep.ID, &ep.ShopID, &ep.URL, &ep.Cursor, &ep.Attempts, &next, &lastErr, &ep.CreatedAt}
	if withDead {
		dst = append(dst, &ep.DeadLetters)
	}
	if err := row.Scan(dst...); err != nil {
		return nil, err
	}
	ep.LastError = lastErr.String
	ep.CreatedAt = ep.CreatedAt.UTC()
	if next.Valid && ep.Attempts > 0 { // due time of a retry; an idle endpoint's is its turn
		t := next.Time.UTC()
		ep.NextAt = &t
	}
	return &ep, nil
}

// endpointLockWait bounds the wait for a shop's registration lock.
const endpointLockWait = 5 // seconds

// errEndpointLock: the shop's registration lock was not free in
// endpointLockWait.
var errEndpointLock = errors.New("webhook: another registration for the shop holds its lock")

func (s myStore) insertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*Endpoint, error) {
	// The lock is the session's: taken and released on one connection,
	// released after the commit, so the next registration counts this one.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, myEndpointLock, shop, endpointLockWait).Scan(&got); err != nil {
		return nil, err
	}
	if got.Int64 != 1 {
		return nil, errEndpointLock
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(c, myEndpointUnlock, shop); err != nil {
			// Never hand a session holding the lock back to the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var ep *Endpoint
	err = inTxOn(ctx, conn, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, myEndpointCount, shop).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return ErrTooMany
		}
		var cursor int64
		if after != nil {
			cursor = *after
		} else if err := tx.QueryRowContext(ctx, myEndpointHead, shop, shop).Scan(&cursor); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, myEndpointInsert, shop, url, secret, cursor)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		ep, err = scanMyEndpoint(tx.QueryRowContext(ctx, myEndpointGet, shop, id), false)
		return err
	})
	return ep, err
}

func (s myStore) listEndpoints(ctx context.Context, shop int64) ([]Endpoint, error) {
	rows, err := s.db.QueryContext(ctx, myEndpointList, shop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Endpoint{}
	for rows.Next() {
		ep, err := scanMyEndpoint(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, *ep)
	}
	return out, rows.Err()
}

func (s myStore) deleteEndpoint(ctx context.Context, shop, id int64) (*Endpoint, error) {
	var ep *Endpoint
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		ep, err = scanMyEndpoint(tx.QueryRowContext(ctx, myEndpointGet, shop, id), false)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		// Counted under the endpoint's lock: the deliverer adds a dead
		// letter only while it holds the endpoint (dead_letter_skip.sql).
		if err := tx.QueryRowContext(ctx, myEndpointDead, id).Scan(&ep.DeadLetters); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, myEndpointDelete, id)
		return err
	})
	return ep, err
}

func (s myStore) deadLetters(ctx context.Context, shop int64, limit int) ([]DeadLetter, error) {
	rows, err := s.db.QueryContext(ctx, myDeadLetters, shop, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []DeadLetter{}
	for rows.Next() {
		var d DeadLetter
		var ev []byte
		if err := rows.Scan(&d.ID, &d.EndpointID, &d.ShopID, &d.Cursor, &ev, &d.Attempts, &d.LastError, &d.DeadAt); err != nil {
			return nil, err
		}
		d.Event, d.DeadAt = ev, d.DeadAt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s myStore) lease(ctx context.Context, leaseFor time.Duration, n int) ([]leased, error) {
	var out []leased
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, myLeaseDue, n)
		if err != nil {
			return err
		}
		for rows.Next() {
			var l leased
			var ff sql.NullTime
			if err := rows.Scan(&l.id, &l.shop, &l.url, &l.secret, &l.cursor, &l.attempts, &ff); err != nil {
				rows.Close()
				return err
			}
			if ff.Valid {
				t := ff.Time
				l.firstFailed = &t
			}
			out = append(out, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, l := range out { // at most n (the free workers)
			if _, err := tx.ExecContext(ctx, myLease, leaseFor.Microseconds(), l.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s myStore) unlease(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, myUnlease, id)
	return err
}

func (s myStore) delivered(ctx context.Context, id, cursor int64) error {
	_, err := s.db.ExecContext(ctx, myDelivered, cursor, id)
	return err
}

func (s myStore) failed(ctx context.Context, id int64, attempts int, msg string, wait, horizon time.Duration) (bool, error) {
	var past bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, myFailed, attempts, msg, wait.Microseconds(), id); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, myFailedPast, horizon.Microseconds(), id).Scan(&past)
	})
	return past, err
}

func (s myStore) deadLetter(ctx context.Context, id, shop, cursor int64, event []byte, attempts int, msg string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, myDeadLetter, id, shop, cursor, string(event), attempts, msg); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, myDeadLetterSkip, cursor, id)
		return err
	})
}
