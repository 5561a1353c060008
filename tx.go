package holdfast

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ownBeginner opens the client's own transactions. BEGIN and the
// transaction's settings (SET LOCAL, so nothing leaks into a pooled server
// connection behind PgBouncer) go in one round trip. JIT is off: the
// engine's statements are short, and a JIT compile (a second on this
// class of machine) would dwarf them whenever the planner's estimate for a
// maintenance scan crosses jit_above_cost.
type ownBeginner struct {
	c     *Client
	route string
}

func (b ownBeginner) Begin(ctx context.Context) (pgx.Tx, error) {
	conn, err := b.c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// No arguments: pgx sends it with the simple protocol, which runs the
	// several statements in one round trip.
	if _, err := conn.Exec(ctx, b.c.beginSQL(b.route)); err != nil {
		conn.Release()
		return nil, err
	}
	return &ownTx{conn: conn}, nil
}

func (c *Client) beginSQL(route string) string {
	k := textKey{route: route, name: "begin"}
	if s, ok := c.texts.Load(k); ok {
		return s.(string)
	}
	s := fmt.Sprintf("/* app='holdfast',route='%s' */ BEGIN ISOLATION LEVEL READ COMMITTED; "+
		"SET LOCAL lock_timeout = '%s'; SET LOCAL statement_timeout = '%s'; "+
		"SET LOCAL idle_in_transaction_session_timeout = '%s'; SET LOCAL jit = off",
		route, c.setLocal[0], c.setLocal[1], c.setLocal[2])
	c.texts.Store(k, s)
	return s
}

// ownTx is a transaction on a pooled connection that holdfast began itself.
// It implements the parts of pgx.Tx the engine uses.
type ownTx struct {
	conn *pgxpool.Conn
}

var errNoNesting = errors.New("holdfast: nested transactions are not used on the client's own transactions")

func (t *ownTx) Begin(ctx context.Context) (pgx.Tx, error) { return nil, errNoNesting }

func (t *ownTx) Commit(ctx context.Context) error {
	if t.conn == nil {
		return pgx.ErrTxClosed
	}
	tag, err := t.conn.Exec(ctx, "COMMIT")
	t.conn.Release()
	t.conn = nil
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t *ownTx) Rollback(ctx context.Context) error {
	if t.conn == nil {
		return pgx.ErrTxClosed
	}
	_, err := t.conn.Exec(ctx, "ROLLBACK")
	// Release destroys the connection unless it is idle and healthy.
	t.conn.Release()
	t.conn = nil
	return err
}

func (t *ownTx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

func (t *ownTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

func (t *ownTx) LargeObjects() pgx.LargeObjects {
	panic("holdfast: large objects are not used on the client's own transactions")
}

func (t *ownTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Conn().Prepare(ctx, name, sql)
}

func (t *ownTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}

func (t *ownTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t *ownTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *ownTx) Conn() *pgx.Conn { return t.conn.Conn() }
