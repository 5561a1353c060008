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
//
// The SAVEPOINT is sent lazily, with the operation's first statement: on
// its own round trip before a statement sent through the usual methods, or
// in the same pipeline when the operation sends its statements as one
// (savepointTx.pipeline).
type savepointBeginner struct {
	c     *Client
	outer pgx.Tx
	route string
}

func (b savepointBeginner) Begin(ctx context.Context) (pgx.Tx, error) {
	return &savepointTx{Tx: b.outer, comment: b.c.comment(ctx, b.route)}, nil
}

// savepointState is where a savepointTx is in its life.
type savepointState int

const (
	savepointPending  savepointState = iota // nothing sent yet
	savepointOpen                           // SAVEPOINT done, not yet released
	savepointReleased                       // released by the operation's own pipeline: Commit has nothing left to do
	savepointDone                           // committed or rolled back
)

// savepointTx is the caller's transaction inside holdfast's savepoint.
type savepointTx struct {
	pgx.Tx
	comment string
	state   savepointState
}

func (t *savepointTx) Begin(ctx context.Context) (pgx.Tx, error) { return nil, errNoNesting }

// open sends the SAVEPOINT before the operation's first statement.
func (t *savepointTx) open(ctx context.Context) error {
	switch t.state {
	case savepointOpen:
		return nil
	case savepointPending:
		if _, err := t.Tx.Exec(ctx, t.comment+"SAVEPOINT holdfast"); err != nil {
			return err
		}
		t.state = savepointOpen
		return nil
	}
	return pgx.ErrTxClosed
}

// pipelined reports whether the operation can still send its SAVEPOINT in
// its own pipeline (nothing has been sent yet).
func (t *savepointTx) pipelined() bool { return t.state == savepointPending }

// pipeline sends b's statements between SAVEPOINT and, when release is
// set, RELEASE, in one round trip. Its results are b's; the SAVEPOINT's and
// the RELEASE's are read by the returned batch's Close. The caller must
// have checked pipelined.
func (t *savepointTx) pipeline(ctx context.Context, b *pgx.Batch, release bool) *savepointBatch {
	full := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+2)}
	full.Queue(t.comment + "SAVEPOINT holdfast")
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	if release {
		full.Queue(t.comment + "RELEASE SAVEPOINT holdfast")
	}
	br := t.Tx.SendBatch(ctx, full)
	sb := &savepointBatch{BatchResults: br, t: t, release: release}
	if _, err := br.Exec(); err != nil {
		// No savepoint: nothing to roll back to (the caller's transaction
		// was already failed, say); the statements after it were skipped.
		sb.err = err
		t.state = savepointDone
		return sb
	}
	t.state = savepointOpen
	return sb
}

// savepointBatch is the results of a savepointTx.pipeline.
type savepointBatch struct {
	pgx.BatchResults
	t       *savepointTx
	release bool
	err     error // the SAVEPOINT's error
}

// Close reads the RELEASE's answer (when queued and every statement before
// it succeeded) and closes the batch. The savepoint is released only when
// Close returns nil.
func (b *savepointBatch) Close() error {
	if b.err != nil {
		_ = b.BatchResults.Close()
		return b.err
	}
	if b.release {
		if _, err := b.BatchResults.Exec(); err != nil {
			_ = b.BatchResults.Close()
			return err
		}
	}
	if err := b.BatchResults.Close(); err != nil {
		return err
	}
	if b.release {
		b.t.state = savepointReleased
	}
	return nil
}

func (t *savepointTx) Commit(ctx context.Context) error {
	switch t.state {
	case savepointPending, savepointReleased:
		// Nothing sent, or released by the operation's pipeline.
		t.state = savepointDone
		return nil
	case savepointDone:
		return pgx.ErrTxClosed
	}
	t.state = savepointDone
	_, err := t.Tx.Exec(ctx, t.comment+"RELEASE SAVEPOINT holdfast")
	return err
}

func (t *savepointTx) Rollback(ctx context.Context) error {
	switch t.state {
	case savepointPending:
		t.state = savepointDone
		return nil
	case savepointReleased:
		// Released: its work is the caller's transaction's now. The
		// operation never fails after its pipeline released.
		t.state = savepointDone
		return errors.New("holdfast: rollback of a released savepoint")
	case savepointDone:
		return pgx.ErrTxClosed
	}
	t.state = savepointDone
	_, err := t.Tx.Exec(ctx, t.comment+"ROLLBACK TO SAVEPOINT holdfast; RELEASE SAVEPOINT holdfast")
	return err
}

// rollbackKeep rolls the savepoint's work back and keeps it open, for the
// operation to go on in it.
func (t *savepointTx) rollbackKeep(ctx context.Context) error {
	if t.state != savepointOpen {
		return pgx.ErrTxClosed
	}
	_, err := t.Tx.Exec(ctx, t.comment+"ROLLBACK TO SAVEPOINT holdfast")
	return err
}

// The statements of an operation run after its SAVEPOINT.

func (t *savepointTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.open(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *savepointTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.open(ctx); err != nil {
		return nil, err
	}
	return t.Tx.Query(ctx, sql, args...)
}

func (t *savepointTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.open(ctx); err != nil {
		return errRow{err}
	}
	return t.Tx.QueryRow(ctx, sql, args...)
}

func (t *savepointTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.open(ctx); err != nil {
		return errBatch{err}
	}
	return t.Tx.SendBatch(ctx, b)
}

func (t *savepointTx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	if err := t.open(ctx); err != nil {
		return 0, err
	}
	return t.Tx.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

func (t *savepointTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.open(ctx); err != nil {
		return nil, err
	}
	return t.Tx.Prepare(ctx, name, sql)
}

// errRow is a pgx.Row whose statement was never sent.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errBatch is a pgx.BatchResults whose batch was never sent.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow{b.err} }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
