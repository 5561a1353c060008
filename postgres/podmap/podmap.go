// Package podmap is the shard map of package pods (shop → pod) on
// PostgreSQL: two small tables in a control database of their own, with
// their own migrations (Migrate), separate from holdfast's schema in the
// pods. Routers read it through their cache; it is written when a shop is
// first placed, when a shop moves (Switch) and by the operator.
//
//	pool, _ := pgxpool.New(ctx, controlURL)
//	_ = podmap.Migrate(ctx, pool)
//	m := podmap.New(pool)
//	r, _ := pods.New(ctx, m, []pods.Pod{{Name: "a", Engine: a}, {Name: "b", Engine: b}}, pods.Config{})
package podmap

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/pods"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

//go:embed migrations/*.sql
var migrationFiles embed.FS

var statements = sqltext.Load("podmap", sqlFiles, "sql")

// route is the sqlcommenter route of the map's statements.
const route = "podmap"

// Map is the shard map in a PostgreSQL control database. Safe for
// concurrent use.
type Map struct {
	pool *pgxpool.Pool
}

var _ pods.Map = (*Map)(nil)

// New returns the map in pool's database, which Migrate has set up.
func New(pool *pgxpool.Pool) *Map { return &Map{pool: pool} }

// Pool is the control database's pool.
func (m *Map) Pool() *pgxpool.Pool { return m.pool }

func scan(row pgx.Row) (pods.Placement, error) {
	var p pods.Placement
	err := row.Scan(&p.ShopID, &p.Pod, &p.Epoch, &p.AssignedAt)
	return p, err
}

// Lookup implements pods.Map.
func (m *Map) Lookup(ctx context.Context, shopID int64) (pods.Placement, error) {
	p, err := scan(m.pool.QueryRow(ctx, statements.Tagged(route, "lookup"), shopID))
	if errors.Is(err, pgx.ErrNoRows) {
		return pods.Placement{}, pods.ErrUnassigned
	}
	return p, err
}

// Assign implements pods.Map.
func (m *Map) Assign(ctx context.Context, shopID int64, pod string) (pods.Placement, error) {
	p, err := scan(m.pool.QueryRow(ctx, statements.Tagged(route, "assign"), shopID, pod))
	if errors.Is(err, pgx.ErrNoRows) {
		// Another assignment committed after this statement's snapshot.
		return m.Lookup(ctx, shopID)
	}
	if foreignKey(err) {
		return pods.Placement{}, fmt.Errorf("%w: %s", pods.ErrUnknownPod, pod)
	}
	return p, err
}

// Switch implements pods.Map.
func (m *Map) Switch(ctx context.Context, shopID int64, from string, epoch int64, to string) (pods.Placement, error) {
	p, err := scan(m.pool.QueryRow(ctx, statements.Tagged(route, "switch"), shopID, from, epoch, to))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return pods.Placement{}, fmt.Errorf("%w: shop %d is not on pod %s at epoch %d", pods.ErrPlacementChanged, shopID, from, epoch)
	case foreignKey(err):
		return pods.Placement{}, fmt.Errorf("%w: %s", pods.ErrUnknownPod, to)
	}
	return p, err
}

// List implements pods.Map.
func (m *Map) List(ctx context.Context, after int64, limit int) ([]pods.Placement, error) {
	if limit <= 0 || limit > pods.ListLimitMax {
		limit = pods.ListLimitMax
	}
	rows, err := m.pool.Query(ctx, statements.Tagged(route, "list"), after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (pods.Placement, error) { return scan(r) })
}

// Pods implements pods.Map.
func (m *Map) Pods(ctx context.Context) ([]pods.PodInfo, error) {
	rows, err := m.pool.Query(ctx, statements.Tagged(route, "pods"))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (pods.PodInfo, error) {
		var p pods.PodInfo
		err := r.Scan(&p.Name, &p.AcceptsNew, &p.Shops)
		return p, err
	})
}

// Register implements pods.Map.
func (m *Map) Register(ctx context.Context, names []string) error {
	for _, n := range names {
		if !pods.ValidName(n) {
			return fmt.Errorf("podmap: pod name %q: %s", n, pods.NameRule)
		}
	}
	_, err := m.pool.Exec(ctx, statements.Tagged(route, "register"), names)
	return err
}

// SetAcceptsNew implements pods.Map.
func (m *Map) SetAcceptsNew(ctx context.Context, pod string, accepts bool) error {
	var name string
	err := m.pool.QueryRow(ctx, statements.Tagged(route, "accepts_new"), pod, accepts).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", pods.ErrUnknownPod, pod)
	}
	return err
}

// Changes implements pods.Map.
func (m *Map) Changes(ctx context.Context, window time.Duration, limit int) ([]pods.Change, error) {
	rows, err := m.pool.Query(ctx, statements.Tagged(route, "changes"), window.Milliseconds(), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (pods.Change, error) {
		var c pods.Change
		err := r.Scan(&c.Revision, &c.ShopID)
		return c, err
	})
}

func foreignKey(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// Migrate applies the map's pending migrations (migrations/NNN_*.sql, each
// in its own transaction, one migrator at a time) and answers the versions
// it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	type mig struct {
		version int
		sql     string
	}
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var migs []mig
	for _, e := range entries {
		v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("podmap: migration %s: no version", e.Name())
		}
		b, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		migs = append(migs, mig{v, string(b)})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].version < migs[j].version })
	var applied []int
	for _, mg := range migs {
		done, err := func() (bool, error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return false, err
			}
			defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
			for _, name := range []string{"migrations_lock", "migrations_table"} {
				if _, err := tx.Exec(ctx, statements.Get(name)); err != nil {
					return false, err
				}
			}
			var have int
			if err := tx.QueryRow(ctx, statements.Get("migrations_applied")).Scan(&have); err != nil {
				return false, err
			}
			if have >= mg.version {
				return false, nil
			}
			if _, err := tx.Exec(ctx, mg.sql); err != nil {
				return false, fmt.Errorf("podmap: migration %d: %w", mg.version, err)
			}
			if _, err := tx.Exec(ctx, statements.Get("migrations_record"), mg.version); err != nil {
				return false, err
			}
			return true, tx.Commit(ctx)
		}()
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, mg.version)
		}
	}
	return applied, nil
}
