// Package mymove is a MariaDB (MySQL) pod's side of a shop move
// (pods.MoveStore): the fence (the shop's named move lock, which the
// placement guard of migration 15 checks on every row a write touches),
// the copy of a shop's rows from one snapshot of the source into one
// transaction of the target (multi-row INSERTs of CopyBatchRows), the
// digests that verify it, and the marks and purge around the switch.
//
// The fence is a GET_LOCK lock: lock names are server-wide, so it fences
// every process writing the pod's database (serve, other tools), the
// mover running apart from them included, and it ends with the mover's
// session when the mover dies. Taking it, Fence then waits for the writes
// in flight: a locking read of every row of the shop, which waits for
// every transaction holding a lock on one — the guard runs after each
// row's change, under its lock, so a write that passed it before the lock
// was taken holds such a lock until it ends, and every later write is
// refused.
//
// The copy, the discard and the purge write with the session variable
// @holdfast_move set, which the guard and the derived-row triggers (the
// events a hold or ledger row writes) let pass: copied rows arrive with
// their derived rows already. Any session can set it; it is a mover's
// switch, not a permission. The store needs connections configured as the
// engine's (mysql.Configure: parseTime, UTC).
package mymove

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/pods"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("mymove", sqlFiles, "sql")

const route = "mymove"

// CopyBatchRows bounds the rows of one INSERT of a copy (and so its
// placeholders: at most CopyBatchRows × the table's columns).
const CopyBatchRows = 1000

// fenceRetryPause paces the retries of the wait for the writes in flight
// after a deadlock or lock wait timeout with one of them.
const fenceRetryPause = 20 * time.Millisecond

// Store is one MariaDB pod's database, for moves. Safe for concurrent use.
type Store struct {
	db *sql.DB

	mu      sync.Mutex
	version string  // the schema's migrations when tabs was read
	tabs    []table // the shop tables, read from information_schema
}

var _ pods.MoveStore = (*Store)(nil)

// New returns the store of the pod whose database db reaches (migrated to
// version 15 or later).
func New(db *sql.DB) *Store { return &Store{db: db} }

// table is one table holding shops' rows.
type table struct {
	name   string
	cols   []string // insertable columns, in table order
	binary []bool   // per column: a binary string type (kept as bytes)
	pk     []string // primary key columns, in key order
	keyed  bool     // its primary key includes shop_id
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// tables answers the shop tables, read from information_schema again only
// when the database's migrations changed: the catalog's answer takes a few
// hundred milliseconds on a loaded server, which the fence would pay five
// times (FenceState warms it, before the fence).
func (s *Store) tables(ctx context.Context, q querier) ([]table, error) {
	var version string
	if err := queryRow(ctx, q, statements.Tagged(route, "schema_version"), &version); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.version == version && s.tabs != nil {
		defer s.mu.Unlock()
		return s.tabs, nil
	}
	s.mu.Unlock()
	tabs, err := readTables(ctx, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.version, s.tabs = version, tabs
	s.mu.Unlock()
	return tabs, nil
}

func queryRow(ctx context.Context, q querier, query string, dest ...any) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

func readTables(ctx context.Context, q querier) ([]table, error) {
	pks := map[string][]string{}
	rows, err := q.QueryContext(ctx, statements.Tagged(route, "primary_keys"))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, col string
		if err := rows.Scan(&name, &col); err != nil {
			rows.Close()
			return nil, err
		}
		pks[name] = append(pks[name], col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.QueryContext(ctx, statements.Tagged(route, "tables"))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []table
	for rows.Next() {
		var name, col, typ, extra string
		if err := rows.Scan(&name, &col, &typ, &extra); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].name != name {
			out = append(out, table{name: name, pk: pks[name], keyed: slices.Contains(pks[name], "shop_id")})
		}
		t := &out[len(out)-1]
		if generated(extra) {
			continue
		}
		t.cols = append(t.cols, col)
		t.binary = append(t.binary, strings.Contains(typ, "binary") || strings.Contains(typ, "blob"))
	}
	return out, rows.Err()
}

func generated(extra string) bool {
	e := strings.ToUpper(extra)
	return strings.Contains(e, "GENERATED") || strings.Contains(e, "VIRTUAL") ||
		strings.Contains(e, "PERSISTENT") || strings.Contains(e, "STORED")
}

func ident(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func (t table) colList() string {
	cols := make([]string, len(t.cols))
	for i, c := range t.cols {
		cols[i] = ident(c)
	}
	return strings.Join(cols, ", ")
}

// selectOf is the query of a shop's rows of t (? shop), columns in table
// order, in primary key order. Names come from the catalog, quoted.
func (t table) selectOf() string {
	order := make([]string, len(t.pk))
	for i, c := range t.pk {
		order[i] = ident(c)
	}
	q := "SELECT " + t.colList() + " FROM " + ident(t.name) + " WHERE shop_id = ?"
	if len(order) > 0 {
		q += " ORDER BY " + strings.Join(order, ", ")
	}
	return q
}

// fence is a shop's move lock held on one connection of the source.
type fence struct {
	conn *sql.Conn
	shop int64
}

func (f *fence) ShopID() int64 { return f.shop }

func (f *fence) Release(ctx context.Context) error {
	if f.conn == nil {
		return nil
	}
	var ok sql.NullInt64
	err := f.conn.QueryRowContext(ctx, statements.Tagged(route, "fence_unlock"), f.shop).Scan(&ok)
	if err != nil || ok.Int64 != 1 {
		// Closing the session ends its locks for sure.
		discard(f.conn)
	} else {
		f.conn.Close()
	}
	f.conn = nil
	return err
}

// discard closes conn's session instead of returning it to the pool (its
// named locks or session variables must not outlive it).
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// Fence implements pods.MoveStore: the shop's move lock, on a connection
// kept for the fence, then a locking read of every row of the shop (in
// one REPEATABLE READ transaction, committed at once) that waits for the
// transactions writing them; bounded by ctx.
func (s *Store) Fence(ctx context.Context, shopID int64) (pods.Fence, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	wait := 0
	if d, ok := ctx.Deadline(); ok {
		wait = max(0, int(time.Until(d)/time.Second))
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, statements.Tagged(route, "fence_lock"), shopID, wait).Scan(&got); err != nil {
		discard(conn)
		return nil, err
	}
	if got.Int64 != 1 {
		discard(conn)
		return nil, fmt.Errorf("%w: shop %d: another session holds its move lock (a move running)", pods.ErrMoveRefused, shopID)
	}
	f := &fence{conn: conn, shop: shopID}
	tabs, err := s.tables(ctx, conn)
	if err != nil {
		_ = f.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	for {
		err = waitWrites(ctx, conn, tabs, shopID)
		if err == nil {
			return f, nil
		}
		if n := errNumber(err); (n != 1213 && n != 1205) || ctx.Err() != nil {
			_ = f.Release(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("mymove: waiting for shop %d's writes in flight: %w", shopID, err)
		}
		// A deadlock with a write in flight (it waits for a row this read
		// locked while holding one it reads next): it is refused now, the
		// read again waits for it to end.
		select {
		case <-ctx.Done():
			_ = f.Release(context.WithoutCancel(ctx))
			return nil, ctx.Err()
		case <-time.After(fenceRetryPause):
		}
	}
}

func waitWrites(ctx context.Context, conn *sql.Conn, tabs []table, shop int64) error {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	for _, t := range tabs {
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+ident(t.name)+" WHERE shop_id = ? LOCK IN SHARE MODE", shop).Scan(&n); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func errNumber(err error) uint16 {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// moverConn is a connection with @holdfast_move set: its writes pass the
// guard and the derived-row triggers. done unsets it (or drops the
// session).
func (s *Store) moverConn(ctx context.Context) (*sql.Conn, func(), error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.ExecContext(ctx, "SET @holdfast_move = 1"); err != nil {
		discard(conn)
		return nil, nil, err
	}
	return conn, func() {
		if _, err := conn.ExecContext(context.Background(), "SET @holdfast_move = NULL"); err != nil {
			discard(conn)
			return
		}
		conn.Close()
	}, nil
}

// Copy implements pods.MoveStore: one consistent snapshot of the source
// (START TRANSACTION WITH CONSISTENT SNAPSHOT on the fence's connection:
// the fence waited for the writes in flight, and refuses later ones), one
// target transaction that marks the shop incoming and inserts its rows in
// batches of CopyBatchRows, ids and all. InnoDB raises the target's
// AUTO_INCREMENTs past the ids inserted, so the shop's new ids (ledger
// pages, the event sequencer's order) keep growing there.
func (s *Store) Copy(ctx context.Context, pf pods.Fence, to pods.MoveStore, fromPod string) (int64, error) {
	f, ok := pf.(*fence)
	if !ok || f.conn == nil {
		return 0, fmt.Errorf("%w: not a live fence of this store", pods.ErrMoveRefused)
	}
	dst, ok := to.(*Store)
	if !ok {
		return 0, fmt.Errorf("%w: the target is not a MariaDB pod (%T)", pods.ErrMoveRefused, to)
	}
	shop := f.shop
	src := f.conn
	if _, err := src.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return 0, err
	}
	if _, err := src.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return 0, err
	}
	defer src.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck
	tabs, err := s.tables(ctx, src)
	if err != nil {
		return 0, err
	}
	for _, t := range tabs {
		if t.keyed {
			continue
		}
		var has bool
		if err := src.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+ident(t.name)+" WHERE shop_id = ?)", shop).Scan(&has); err != nil {
			return 0, err
		}
		if has {
			return 0, fmt.Errorf("%w: shop %d has rows in %s, keyed by id alone: a move cannot carry them yet", pods.ErrMoveRefused, shop, t.name)
		}
	}
	dconn, done, err := dst.moverConn(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	// The tables are copied in name order, a table before one it refers
	// to (webhook_dead_letters' foreign key on webhook_endpoints): the
	// copy's foreign keys are not checked row by row — it is one
	// consistent snapshot of the source, where they held — as a dump's
	// restore does not check them. Set back before the session is given
	// back (or the session is dropped).
	if _, err := dconn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
		return 0, err
	}
	defer func() {
		if _, err := dconn.ExecContext(context.WithoutCancel(ctx), "SET SESSION foreign_key_checks = 1"); err != nil {
			_ = dconn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	dtx, err := dconn.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer dtx.Rollback() //nolint:errcheck
	var st string
	switch err := dtx.QueryRowContext(ctx, statements.Tagged(route, "state_lock"), shop).Scan(&st); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return 0, err
	case st == pods.FenceIncoming:
		return 0, fmt.Errorf("%w: shop %d is marked incoming on the target already", pods.ErrMoveRefused, shop)
	}
	if _, err := dtx.ExecContext(ctx, statements.Tagged(route, "mark_incoming"), shop, fromPod); err != nil {
		return 0, err
	}
	dtabs, err := dst.tables(ctx, dtx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tabs {
		if !t.keyed {
			continue
		}
		if !slices.ContainsFunc(dtabs, func(d table) bool { return d.name == t.name && slices.Equal(d.cols, t.cols) }) {
			return 0, fmt.Errorf("%w: table %s differs between the pods (migrate both to the same version)", pods.ErrMoveRefused, t.name)
		}
		var has bool
		if err := dtx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+ident(t.name)+" WHERE shop_id = ?)", shop).Scan(&has); err != nil {
			return 0, err
		}
		if has {
			return 0, fmt.Errorf("%w: the target holds rows of shop %d in %s", pods.ErrMoveRefused, shop, t.name)
		}
		n, err := copyTable(ctx, src, dtx, t, shop)
		if err != nil {
			return 0, fmt.Errorf("mymove: copying %s: %w", t.name, err)
		}
		total += n
	}
	return total, dtx.Commit()
}

// copyTable copies the shop's rows of t from the source's snapshot into
// the target's transaction, CopyBatchRows per INSERT.
func copyTable(ctx context.Context, src *sql.Conn, dtx *sql.Tx, t table, shop int64) (int64, error) {
	rows, err := src.QueryContext(ctx, t.selectOf(), shop)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	nc := len(t.cols)
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", nc), ", ") + ")"
	head := "INSERT INTO " + ident(t.name) + " (" + t.colList() + ") VALUES "
	flush := func(args []any) error {
		if len(args) == 0 {
			return nil
		}
		n := len(args) / nc
		q := head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		_, err := dtx.ExecContext(ctx, q, args...)
		return err
	}
	var total int64
	args := make([]any, 0, CopyBatchRows*nc)
	vals := make([]any, nc)
	ptrs := make([]any, nc)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok && !t.binary[i] {
				v = string(b) // text (JSON included) as text, not _binary
			}
			args = append(args, v)
		}
		total++
		if len(args) == cap(args) {
			if err := flush(args); err != nil {
				return 0, err
			}
			args = args[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return total, flush(args)
}

// Digest implements pods.MoveStore: per table holding the shop's rows (by
// a primary key including shop_id), the count and a SHA-256 of the rows
// in primary key order, from one consistent snapshot.
func (s *Store) Digest(ctx context.Context, shopID int64) ([]pods.TableDigest, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck
	tabs, err := s.tables(ctx, conn)
	if err != nil {
		return nil, err
	}
	var out []pods.TableDigest
	for _, t := range tabs {
		if !t.keyed {
			continue
		}
		d, err := digestTable(ctx, conn, t, shopID)
		if err != nil {
			return nil, fmt.Errorf("mymove: digest of %s: %w", t.name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// FenceState implements pods.MoveStore.
func (s *Store) FenceState(ctx context.Context, shopID int64) (string, error) {
	if _, err := s.tables(ctx, s.db); err != nil {
		return "", err
	}
	var st string
	err := s.db.QueryRowContext(ctx, statements.Tagged(route, "fence_state"), shopID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return pods.FenceNone, nil
	}
	return st, err
}

// Tombstone implements pods.MoveStore.
func (s *Store) Tombstone(ctx context.Context, shopID int64, to string) error {
	_, err := s.db.ExecContext(ctx, statements.Tagged(route, "mark_gone"), shopID, to)
	return err
}

// Accept implements pods.MoveStore.
func (s *Store) Accept(ctx context.Context, shopID int64) error {
	_, err := s.db.ExecContext(ctx, statements.Tagged(route, "unmark"), shopID, pods.FenceIncoming)
	return err
}

// Restore implements pods.MoveStore.
func (s *Store) Restore(ctx context.Context, shopID int64) error {
	_, err := s.db.ExecContext(ctx, statements.Tagged(route, "unmark"), shopID, pods.FenceGone)
	return err
}

// marked runs fn in one transaction of a mover's connection, under the
// lock of the shop's mark, which must be want.
func (s *Store) marked(ctx context.Context, shopID int64, want string, fn func(*sql.Tx, []table) error) error {
	conn, done, err := s.moverConn(ctx)
	if err != nil {
		return err
	}
	defer done()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	var st string
	if err := tx.QueryRowContext(ctx, statements.Tagged(route, "state_lock"), shopID).Scan(&st); errors.Is(err, sql.ErrNoRows) || err == nil && st != want {
		return fmt.Errorf("%w: shop %d is not marked %s here (%q): its rows stay", pods.ErrMoveRefused, shopID, want, st)
	} else if err != nil {
		return err
	}
	tabs, err := s.tables(ctx, tx)
	if err != nil {
		return err
	}
	if err := fn(tx, tabs); err != nil {
		return err
	}
	return tx.Commit()
}

// Discard implements pods.MoveStore: in one transaction, under the mark's
// row lock.
func (s *Store) Discard(ctx context.Context, shopID int64) error {
	return s.marked(ctx, shopID, pods.FenceIncoming, func(tx *sql.Tx, tabs []table) error {
		for _, t := range tabs {
			if !t.keyed {
				continue
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+ident(t.name)+" WHERE shop_id = ?", shopID); err != nil {
				return fmt.Errorf("mymove: discarding %s: %w", t.name, err)
			}
		}
		_, err := tx.ExecContext(ctx, statements.Tagged(route, "unmark"), shopID, pods.FenceIncoming)
		return err
	})
}

// Purge implements pods.MoveStore: one transaction deleting up to batch
// rows, table by table, of a shop marked gone.
func (s *Store) Purge(ctx context.Context, shopID int64, batch int) (int64, error) {
	var n int64
	err := s.marked(ctx, shopID, pods.FenceGone, func(tx *sql.Tx, tabs []table) error {
		for _, t := range tabs {
			if !t.keyed || n >= int64(batch) {
				continue
			}
			res, err := tx.ExecContext(ctx, "DELETE FROM "+ident(t.name)+" WHERE shop_id = ? LIMIT ?", shopID, int64(batch)-n)
			if err != nil {
				return fmt.Errorf("mymove: purging %s: %w", t.name, err)
			}
			k, _ := res.RowsAffected()
			n += k
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
