package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/holdfast/holdfast/webhook"
)

var (
	myEndpointCount  = webhookStmt("endpoint_count")
	myEndpointLock   = webhookStmt("endpoint_lock")
	myEndpointHead   = webhookStmt("endpoint_head")
	myEndpointUnlock = webhookStmt("endpoint_unlock")
	myEndpointInsert = webhookStmt("endpoint_insert")
	myEndpointGet    = webhookStmt("endpoint_get")
	myEndpointDelete = webhookStmt("endpoint_delete")
	myEndpointDead   = webhookStmt("endpoint_dead_count")
	myEndpointList   = webhookStmt("endpoint_list")
	myDeadLetters    = webhookStmt("dead_letters")
	myLeaseDue       = webhookStmt("lease_due")
	myLease          = webhookStmt("lease")
	myUnlease        = webhookStmt("unlease")
	myDelivered      = webhookStmt("delivered")
	myFailed         = webhookStmt("failed")
	myFailedPast     = webhookStmt("failed_past")
	myDeadLetter     = webhookStmt("dead_letter")
	myDeadLetterSkip = webhookStmt("dead_letter_skip")
	myLeaseCheck     = webhookStmt("lease_check")
)

// Webhooks returns the webhook registry's store in a MySQL/MariaDB database
// (package mysql/migrations, migration 009), db configured as the MySQL
// engine's (mysql.Configure). Where PostgreSQL answers with one statement
// (RETURNING, writable CTEs), it runs a short transaction. Safe for
// concurrent use.
func Webhooks(db *sql.DB) webhook.Store { return webhooks{db: db} }

type webhooks struct{ db *sql.DB }

// inTx runs fn in a transaction at READ COMMITTED, set explicitly: the
// server's default (REPEATABLE READ in InnoDB) takes gap locks on the
// endpoints' index that would serialize leasing and registering.
func (s webhooks) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
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

func scanMyEndpoint(row scanner, withDead bool) (*webhook.Endpoint, error) {
	var ep webhook.Endpoint
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
	if next.Valid {
		ep.NextAt = &next.Time
	}
	ep.Normalize()
	return &ep, nil
}

// endpointLockWait bounds the wait for a shop's registration lock.
const endpointLockWait = 5 // seconds

// errEndpointLock: the shop's registration lock was not free in
// endpointLockWait.
var errEndpointLock = errors.New("webhook: another registration for the shop holds its lock")

func (s webhooks) InsertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*webhook.Endpoint, error) {
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
	var ep *webhook.Endpoint
	err = inTxOn(ctx, conn, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, myEndpointCount, shop).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return webhook.ErrTooMany
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

func (s webhooks) ListEndpoints(ctx context.Context, shop int64) ([]webhook.Endpoint, error) {
	rows, err := s.db.QueryContext(ctx, myEndpointList, shop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []webhook.Endpoint{}
	for rows.Next() {
		ep, err := scanMyEndpoint(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, *ep)
	}
	return out, rows.Err()
}

func (s webhooks) DeleteEndpoint(ctx context.Context, shop, id int64) (*webhook.Endpoint, error) {
	var ep *webhook.Endpoint
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		ep, err = scanMyEndpoint(tx.QueryRowContext(ctx, myEndpointGet, shop, id), false)
		if errors.Is(err, sql.ErrNoRows) {
			return webhook.ErrNotFound
		}
		if err != nil {
			return err
		}
		// Counted under the endpoint's lock: the deliverer adds a dead
		// letter only under the endpoint's lock (lease_check.sql).
		if err := tx.QueryRowContext(ctx, myEndpointDead, shop, id).Scan(&ep.DeadLetters); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, myEndpointDelete, shop, id)
		return err
	})
	return ep, err
}

func (s webhooks) DeadLetters(ctx context.Context, shop int64, limit int) ([]webhook.DeadLetter, error) {
	rows, err := s.db.QueryContext(ctx, myDeadLetters, shop, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []webhook.DeadLetter{}
	for rows.Next() {
		var d webhook.DeadLetter
		var ev []byte
		if err := rows.Scan(&d.ID, &d.EndpointID, &d.ShopID, &d.Cursor, &ev, &d.Attempts, &d.LastError, &d.DeadAt); err != nil {
			return nil, err
		}
		d.Event, d.DeadAt = ev, d.DeadAt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s webhooks) Lease(ctx context.Context, leaseFor time.Duration, n int) ([]webhook.Leased, error) {
	var out []webhook.Leased
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, myLeaseDue, n)
		if err != nil {
			return err
		}
		for rows.Next() {
			var l webhook.Leased
			var ff sql.NullTime
			if err := rows.Scan(&l.ID, &l.Shop, &l.URL, &l.Secret, &l.Cursor, &l.Attempts, &ff, &l.Token); err != nil {
				rows.Close()
				return err
			}
			if ff.Valid {
				t := ff.Time
				l.FirstFailed = &t
			}
			out = append(out, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i, l := range out { // at most n (the free workers)
			if _, err := tx.ExecContext(ctx, myLease, leaseFor.Microseconds(), l.Shop, l.ID); err != nil {
				return err
			}
			out[i].Token++ // lease.sql's, on the row locked since it was read
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// leased runs fn in a transaction after locking the endpoint's row and
// checking that token is still its lease token (lease_check.sql): else
// fn does not run and the answer is webhook.ErrLeaseLost. A locking read
// rather than the token in each UPDATE's WHERE: MariaDB counts the rows an
// UPDATE changed, not those it matched, so an UPDATE that changes nothing
// could not tell a lost lease from a write already made.
func (s webhooks) leased(ctx context.Context, shop, id, token int64, fn func(tx *sql.Tx) error) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var got int64
		err := tx.QueryRowContext(ctx, myLeaseCheck, shop, id).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && got != token) {
			return webhook.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		return fn(tx)
	})
}

// Unlease, Delivered, Failed and DeadLetter address an endpoint by its
// shop and id (ids repeat across shops on a pod a shop moved to) and are
// fenced by the lease token.
func (s webhooks) Unlease(ctx context.Context, shop, id, token int64) error {
	return s.leased(ctx, shop, id, token, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, myUnlease, shop, id)
		return err
	})
}

func (s webhooks) Delivered(ctx context.Context, shop, id, token, cursor int64) error {
	return s.leased(ctx, shop, id, token, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, myDelivered, cursor, shop, id)
		return err
	})
}

func (s webhooks) Failed(ctx context.Context, shop, id, token int64, attempts int, msg string, wait, horizon time.Duration) (bool, error) {
	var past bool
	err := s.leased(ctx, shop, id, token, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, myFailed, attempts, msg, wait.Microseconds(), shop, id); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, myFailedPast, horizon.Microseconds(), shop, id).Scan(&past)
	})
	return past, err
}

func (s webhooks) DeadLetter(ctx context.Context, id, shop, token, cursor int64, event []byte, attempts int, msg string) error {
	return s.leased(ctx, shop, id, token, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, myDeadLetter, id, shop, cursor, string(event), attempts, msg); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, myDeadLetterSkip, cursor, shop, id)
		return err
	})
}
