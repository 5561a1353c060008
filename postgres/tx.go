package postgres

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
	pool  *pgxpool.Pool // the client's pool, or its maintenance pool
	route string
}

func (b ownBeginner) Begin(ctx context.Context) (pgx.Tx, error) {
	conn, err := b.pool.Acquire(ctx)
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
	s := fmt.Sprintf("%sBEGIN ISOLATION LEVEL READ COMMITTED; "+
		"SET LOCAL lock_timeout = '%s'; SET LOCAL statement_timeout = '%s'; "+
		"SET LOCAL idle_in_transaction_session_timeout = '%s'; SET LOCAL jit = off",
		c.comment(context.Background(), route), c.setLocal[0], c.setLocal[1], c.setLocal[2])
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
	err = commitChecked(t.conn.Conn().PgConn(), err) // follow.go: a cancelled synchronous-replication wait
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

// savepointBeginner runs an operation inside the caller's transaction, in a
// savepoint whose statements carry the route's comment, so a caller's
// transaction left idle after a …Tx call is still attributed to holdfast's
// route in pg_stat_activity.
type savepointBeginner struct {
	c     *Client
	outer pgx.Tx
	route string
}

func (b savepointBeginner) Begin(ctx context.Context) (pgx.Tx, error) {
	comment := b.c.comment(ctx, b.route)
	if _, err := b.outer.Exec(ctx, comment+"SAVEPOINT holdfast"); err != nil {
		return nil, err
	}
	return &savepointTx{Tx: b.outer, comment: comment}, nil
}

// savepointTx is the caller's transaction inside holdfast's savepoint.
type savepointTx struct {
	pgx.Tx
	comment string
	done    bool
}

func (t *savepointTx) Begin(ctx context.Context) (pgx.Tx, error) { return nil, errNoNesting }

func (t *savepointTx) Commit(ctx context.Context) error {
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	_, err := t.Tx.Exec(ctx, t.comment+"RELEASE SAVEPOINT holdfast")
	return err
}

func (t *savepointTx) Rollback(ctx context.Context) error {
	if t.done {
		return pgx.ErrTxClosed
	}
	t.done = true
	_, err := t.Tx.Exec(ctx, t.comment+"ROLLBACK TO SAVEPOINT holdfast; RELEASE SAVEPOINT holdfast")
	return err
}
