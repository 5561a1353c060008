package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/postgres/migrations"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the engine's embedded statements, by file name.
var statements = sqltext.Load("holdfast", sqlFiles, "sql")

// Client is a handle to holdfast's tables in one PostgreSQL database. It is
// safe for concurrent use by any number of goroutines; any number of
// Clients, in any number of processes, may share a database.
type Client struct {
	// The engine (package engine): the operations written once, over
	// this package as its driver (driver.go). Its methods are the
	// Client's.
	*engineClient

	pool     *pgxpool.Pool
	cfg      holdfast.Config
	core     *engine.Core // the engine's driver-free logic (package engine)
	sql      map[string]string
	setLocal [3]string
	// combineLockWait is the lock_timeout of a combined batch.
	combineLockWait string

	keys  sync.Map        // Key -> keyInfo: a short-lived cache of per-key strategy
	texts sync.Map        // textKey -> tagged statement text
	depth driver.DeepKeys // the batch keys deep enough for a batch per stripe (combine.go)

	// Maintenance's own small pool (see WithMaintenancePool), opened and
	// closed by the engine's Start and Stop (maintenance.go); the workers
	// and their scheduling are the engine's.
	maintMu      sync.Mutex
	maintPool    *pgxpool.Pool
	maintPoolOpt *pgxpool.Pool // WithMaintenancePool
	maintOwned   bool
}

// engineClient is the engine over this package's driver; embedded under
// this name, its methods are the Client's and the field is not exported.
type engineClient = engine.Client[pgx.Tx]

// keyInfoTTL bounds how long a replica trusts its cached view of a key's
// strategy. A stale view is safe (every buffer counts as pooled), only slower.
const keyInfoTTL = 2 * time.Second

type keyInfo struct {
	strategy holdfast.Strategy
	cap      int
	at       time.Time
}

// SchemaVersion is the schema version (package migrate) this engine needs
// at least. A newer schema is accepted: during a rolling upgrade the new
// binary migrates while old ones still run.
const SchemaVersion = 28

// schemaCheckTimeout bounds New's schema check.
const schemaCheckTimeout = 30 * time.Second

// New returns a Client on pool. It does not migrate: it checks the schema
// version and answers ErrSchemaMissing or ErrSchemaOutdated when the
// database needs `holdfast migrate` (migrations.Up) first, ErrUnavailable when
// it cannot be asked, and an *ArgumentError naming the field for a Config
// outside its bounds.
func New(pool *pgxpool.Pool, cfg holdfast.Config, opts ...Option) (*Client, error) {
	cfg, err := engine.Configure(cfg, Strategies())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), schemaCheckTimeout)
	defer cancel()
	// A pooled connection that a server restart closed fails once; the
	// next attempt gets a fresh one.
	v, err := migrations.Version(ctx, pool)
	for attempt := 0; err != nil && attempt < 3 && ctx.Err() == nil && (connectionLost(err) || retryable(err)); attempt++ {
		v, err = migrations.Version(ctx, pool)
	}
	switch {
	case err != nil && loginRefusedFinal(err):
		// The user, password or database is wrong: no later try clears it.
		return nil, fmt.Errorf("holdfast: checking the schema version: %w", err)
	case err != nil:
		return nil, fmt.Errorf("%w: checking the schema version: %w", holdfast.ErrUnavailable, err)
	case v == 0:
		return nil, holdfast.ErrSchemaMissing
	case v < SchemaVersion:
		return nil, fmt.Errorf("%w (database at version %d, this engine needs %d)", holdfast.ErrSchemaOutdated, v, SchemaVersion)
	}
	c := &Client{pool: pool, cfg: cfg, core: engine.NewCore(cfg, classifier{}), sql: statements.Map()}
	c.depth.Depth, c.depth.Max = StripeDepth, DirtyKeysMax
	c.engineClient = engine.NewClient[pgx.Tx](c.core, (*engineDriver)(c))
	for _, o := range opts {
		o(c)
	}
	c.setLocal = [3]string{ms(cfg.LockTimeout), ms(cfg.StatementTimeout), ms(cfg.IdleInTransactionTimeout)}
	c.combineLockWait = ms(min(cfg.CombineLockWait, cfg.LockTimeout))
	engine.LoadBuyerSecret(c.engineClient)
	return c, nil
}

// Option configures a Client beyond the engine-neutral Config: what only
// the PostgreSQL engine has.
type Option func(*Client)

// WithMaintenancePool makes pool the one the sweeper, purger and
// replenisher use; the client never closes it. Without it, Start creates
// one from the client pool's configuration with Config.MaintenanceConns
// connections, and Stop closes it. Either way maintenance never competes
// with checkout for the client pool's connections (seed 000).
func WithMaintenancePool(pool *pgxpool.Pool) Option {
	return func(c *Client) { c.maintPoolOpt = pool }
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// Pool is the connection pool the client runs on.
func (c *Client) Pool() *pgxpool.Pool { return c.pool }

// Config is the client's configuration with defaults filled in.
func (c *Client) Config() holdfast.Config { return c.cfg }

// now is the injected clock as a statement argument; nil lets the database
// clock decide.
func (c *Client) now() *time.Time {
	if c.cfg.Now == nil {
		return nil
	}
	t := c.cfg.Now()
	return &t
}

// keyHash is the key's advisory lock id.
func keyHash(k holdfast.Key) int64 {
	h := fnv.New64a()
	var b [24]byte
	for i, v := range [3]int64{k.ShopID, k.ItemID, k.LocationID} {
		for j := 0; j < 8; j++ {
			b[i*8+j] = byte(v >> (8 * j))
		}
	}
	h.Write(b[:])
	return int64(h.Sum64())
}

var _ holdfast.Engine = (*Client)(nil)
