// Package pgmove is a PostgreSQL pod's side of a shop move (pods.MoveStore):
// the fence (the shop's advisory lock, which the placement guard of
// migration 15 checks on every write of the shop), the copy of a shop's
// rows from one pod's snapshot to another pod in one transaction (COPY, as
// text, table by table), the digests that verify it, and the marks and
// purge around the switch.
//
// The copy, the discard and the purge write with session_replication_role
// = replica, which skips triggers (the guard, the derived-row triggers:
// copied rows arrive with their derived rows already); that setting needs
// a superuser (or, on PostgreSQL 15+, a role granted SET on it).
package pgmove

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/pods"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("pgmove", sqlFiles, "sql")

const route = "pgmove"

// Store is one PostgreSQL pod's database, for moves. Safe for concurrent
// use.
type Store struct {
	pool *pgxpool.Pool
}

var _ pods.MoveStore = (*Store)(nil)

// New returns the store of the pod whose database pool reaches (migrated
// to version 15 or later).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// table is one table holding shops' rows.
type table struct {
	name    string
	cols    []string
	keyed   bool     // its primary key includes shop_id
	serials []string // columns fed by a sequence
}

func (s *Store) tables(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]table, error) {
	rows, err := q.Query(ctx, statements.Tagged(route, "tables"))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (table, error) {
		var t table
		err := r.Scan(&t.name, &t.cols, &t.keyed, &t.serials)
		return t, err
	})
}

// selectOf is the query of a shop's rows of t, columns in table order. The
// table and column names come from the catalog, quoted; the shop id is a
// number (COPY takes no parameters).
func (t table) selectOf(shopID int64) string {
	cols := make([]string, len(t.cols))
	for i, c := range t.cols {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE shop_id = %d", strings.Join(cols, ", "), pgx.Identifier{t.name}.Sanitize(), shopID)
}

func (t table) colList() string {
	cols := make([]string, len(t.cols))
	for i, c := range t.cols {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(cols, ", ")
}

// fence is a shop's advisory lock held on one connection of the source.
type fence struct {
	conn *pgxpool.Conn
	shop int64
}

func (f *fence) ShopID() int64 { return f.shop }

func (f *fence) Release(ctx context.Context) error {
	if f.conn == nil {
		return nil
	}
	var ok bool
	err := f.conn.QueryRow(ctx, statements.Tagged(route, "fence_unlock"), f.shop).Scan(&ok)
	if err != nil || !ok {
		// Closing the session ends its locks for sure.
		_ = f.conn.Hijack().Close(ctx)
	} else {
		f.conn.Release()
	}
	f.conn = nil
	return err
}

// Fence implements pods.MoveStore: the shop's advisory lock, exclusively,
// on a connection kept for the fence; bounded by ctx.
func (s *Store) Fence(ctx context.Context, shopID int64) (pods.Fence, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, statements.Tagged(route, "fence_lock"), shopID); err != nil {
		// A cancelled lock wait may leave the session unsure: close it.
		_ = conn.Hijack().Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &fence{conn: conn, shop: shopID}, nil
}

// Copy implements pods.MoveStore.
func (s *Store) Copy(ctx context.Context, pf pods.Fence, to pods.MoveStore, fromPod string) (int64, error) {
	f, ok := pf.(*fence)
	if !ok || f.conn == nil {
		return 0, fmt.Errorf("%w: not a live fence of this store", pods.ErrMoveRefused)
	}
	dst, ok := to.(*Store)
	if !ok {
		return 0, fmt.Errorf("%w: the target is not a PostgreSQL pod (%T)", pods.ErrMoveRefused, to)
	}
	shop := f.shop
	stx, err := f.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, err
	}
	defer stx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	tabs, err := s.tables(ctx, stx)
	if err != nil {
		return 0, err
	}
	for _, t := range tabs {
		if t.keyed {
			continue
		}
		var has bool
		if err := stx.QueryRow(ctx, "SELECT EXISTS ("+t.selectOf(shop)+")").Scan(&has); err != nil {
			return 0, err
		}
		if has {
			return 0, fmt.Errorf("%w: shop %d has rows in %s, keyed by id alone: a move cannot carry them yet", pods.ErrMoveRefused, shop, t.name)
		}
	}
	dtx, err := dst.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer dtx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	if _, err := dtx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return 0, fmt.Errorf("pgmove: the copy writes without triggers (session_replication_role): %w", err)
	}
	var marked int64
	if err := dtx.QueryRow(ctx, statements.Tagged(route, "mark_incoming"), shop, fromPod).Scan(&marked); errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: shop %d is marked incoming on the target already", pods.ErrMoveRefused, shop)
	} else if err != nil {
		return 0, err
	}
	dtabs, err := dst.tables(ctx, dtx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tabs {
		if !slices.ContainsFunc(dtabs, func(d table) bool { return d.name == t.name && slices.Equal(d.cols, t.cols) }) {
			return 0, fmt.Errorf("%w: table %s differs between the pods (migrate both to the same version)", pods.ErrMoveRefused, t.name)
		}
		var has bool
		if err := dtx.QueryRow(ctx, "SELECT EXISTS ("+t.selectOf(shop)+")").Scan(&has); err != nil {
			return 0, err
		}
		if has {
			return 0, fmt.Errorf("%w: the target holds rows of shop %d in %s", pods.ErrMoveRefused, shop, t.name)
		}
		n, err := copyTable(ctx, stx, dtx, t, shop)
		if err != nil {
			return 0, fmt.Errorf("pgmove: copying %s: %w", t.name, err)
		}
		total += n
		for _, col := range t.serials {
			if err := advance(ctx, dtx, t, col, shop); err != nil {
				return 0, fmt.Errorf("pgmove: advancing %s.%s's sequence: %w", t.name, col, err)
			}
		}
	}
	return total, dtx.Commit(ctx)
}

// copyTable streams the shop's rows of t from the source's snapshot into
// the target, COPY to COPY in text form (every type round-trips exactly).
func copyTable(ctx context.Context, stx, dtx pgx.Tx, t table, shop int64) (int64, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := stx.Conn().PgConn().CopyTo(ctx, pw, "COPY ("+t.selectOf(shop)+") TO STDOUT")
		pw.CloseWithError(err)
		done <- err
	}()
	tag, err := dtx.Conn().PgConn().CopyFrom(ctx, pr, "COPY "+pgx.Identifier{t.name}.Sanitize()+" ("+t.colList()+") FROM STDIN")
	pr.CloseWithError(errors.New("pgmove: the target's COPY ended"))
	serr := <-done
	if err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return tag.RowsAffected(), nil
}

// advance moves the sequence of t.col past the copied ids: the shop's ids
// (and cursors such as ledger pages) keep growing on the target.
func advance(ctx context.Context, tx pgx.Tx, t table, col string, shop int64) error {
	q := fmt.Sprintf(`SELECT setval(x.seq, x.m)
FROM (SELECT pg_get_serial_sequence($1, $2) AS seq, (SELECT max(%s) FROM %s WHERE shop_id = $3) AS m) x
WHERE x.m IS NOT NULL AND x.m > coalesce((SELECT p.last_value FROM pg_sequences p
    WHERE format('%%I.%%I', p.schemaname, p.sequencename) = x.seq), 0)`,
		pgx.Identifier{col}.Sanitize(), pgx.Identifier{t.name}.Sanitize())
	_, err := tx.Exec(ctx, q, pgx.Identifier{t.name}.Sanitize(), col, shop)
	return err
}

// Digest implements pods.MoveStore: per table holding the shop's rows (by
// primary key including shop_id), the count and the sum of the rows'
// 64-bit text hashes (hashtextextended, exact numeric sum: no sort, so it
// costs a scan — an md5 of the rows in order took 2–2.6 s for 230,000
// rows, inside the fence), from one snapshot, in UTC. It detects a lost,
// doubled or changed row short of a deliberate collision.
func (s *Store) Digest(ctx context.Context, shopID int64) ([]pods.TableDigest, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	if _, err := tx.Exec(ctx, "SET LOCAL TimeZone = 'UTC'"); err != nil {
		return nil, err
	}
	tabs, err := s.tables(ctx, tx)
	if err != nil {
		return nil, err
	}
	var out []pods.TableDigest
	for _, t := range tabs {
		if !t.keyed {
			continue
		}
		d := pods.TableDigest{Table: t.name}
		q := "SELECT count(*), coalesce(sum(hashtextextended(x::text, 0)::numeric), 0)::text FROM (" + t.selectOf(shopID) + ") x"
		if err := tx.QueryRow(ctx, q).Scan(&d.Rows, &d.Hash); err != nil {
			return nil, fmt.Errorf("pgmove: digest of %s: %w", t.name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// FenceState implements pods.MoveStore.
func (s *Store) FenceState(ctx context.Context, shopID int64) (string, error) {
	var st string
	err := s.pool.QueryRow(ctx, statements.Tagged(route, "fence_state"), shopID).Scan(&st)
	if errors.Is(err, pgx.ErrNoRows) {
		return pods.FenceNone, nil
	}
	return st, err
}

// Tombstone implements pods.MoveStore.
func (s *Store) Tombstone(ctx context.Context, shopID int64, to string) error {
	_, err := s.pool.Exec(ctx, statements.Tagged(route, "mark_gone"), shopID, to)
	return err
}

// Accept implements pods.MoveStore.
func (s *Store) Accept(ctx context.Context, shopID int64) error {
	_, err := s.pool.Exec(ctx, statements.Tagged(route, "unmark"), shopID, pods.FenceIncoming)
	return err
}

// Restore implements pods.MoveStore.
func (s *Store) Restore(ctx context.Context, shopID int64) error {
	_, err := s.pool.Exec(ctx, statements.Tagged(route, "unmark"), shopID, pods.FenceGone)
	return err
}

// Discard implements pods.MoveStore: in one transaction, under the mark's
// row lock.
func (s *Store) Discard(ctx context.Context, shopID int64) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	var st string
	if err := tx.QueryRow(ctx, statements.Tagged(route, "state_lock"), shopID).Scan(&st); errors.Is(err, pgx.ErrNoRows) || err == nil && st != pods.FenceIncoming {
		return fmt.Errorf("%w: shop %d is not marked incoming here (%q): its rows stay", pods.ErrMoveRefused, shopID, st)
	} else if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return err
	}
	tabs, err := s.tables(ctx, tx)
	if err != nil {
		return err
	}
	for _, t := range tabs {
		if !t.keyed {
			continue
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE shop_id = $1", pgx.Identifier{t.name}.Sanitize()), shopID); err != nil {
			return fmt.Errorf("pgmove: discarding %s: %w", t.name, err)
		}
	}
	if _, err := tx.Exec(ctx, statements.Tagged(route, "unmark"), shopID, pods.FenceIncoming); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Purge implements pods.MoveStore: one transaction deleting up to batch
// rows, table by table, of a shop marked gone.
func (s *Store) Purge(ctx context.Context, shopID int64, batch int) (int64, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	var st string
	if err := tx.QueryRow(ctx, statements.Tagged(route, "state_lock"), shopID).Scan(&st); errors.Is(err, pgx.ErrNoRows) || err == nil && st != pods.FenceGone {
		return 0, fmt.Errorf("%w: shop %d is not marked gone here (%q): its rows stay", pods.ErrMoveRefused, shopID, st)
	} else if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return 0, err
	}
	tabs, err := s.tables(ctx, tx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tabs {
		if !t.keyed || n >= int64(batch) {
			continue
		}
		name := pgx.Identifier{t.name}.Sanitize()
		tag, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE (tableoid, ctid) IN (SELECT tableoid, ctid FROM %s WHERE shop_id = $1 LIMIT $2)", name, name), shopID, int64(batch)-n)
		if err != nil {
			return 0, fmt.Errorf("pgmove: purging %s: %w", t.name, err)
		}
		n += tag.RowsAffected()
	}
	return n, tx.Commit(ctx)
}
