package webhook_test

import (
	"context"
	"database/sql"
	"net/netip"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/webhook"
)

// The engines the registry and the deliverer run on.
const (
	enginePostgres = "postgres"
	engineMariaDB  = "mariadb"
)

// engines runs test once per engine, as parallel subtests.
func engines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Helper()
	for _, name := range []string{enginePostgres, engineMariaDB} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, name)
		})
	}
}

// backend is a fresh database on one engine: the engine (the feed), the
// registry, and what a Deliverer needs.
type backend struct {
	eng  holdfast.Engine
	reg  *webhook.Registry
	pool *pgxpool.Pool // PostgreSQL
	db   *sql.DB       // MariaDB
	// store is the registry's store on the engine's database.
	store webhook.Store
}

func newBackend(t *testing.T, engine string, maxConns int) backend {
	t.Helper()
	return newBackendConfig(t, engine, maxConns, holdfast.Config{})
}

// newBackendConfig is newBackend with the engine configured by cfg.
func newBackendConfig(t *testing.T, engine string, maxConns int, cfg holdfast.Config) backend {
	t.Helper()
	if engine == engineMariaDB {
		d := mysqltest.DB(t, maxConns)
		mc, err := mysql.New(d.DB, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return backend{eng: mc, reg: webhook.NewRegistry(mysqlstore.Webhooks(d.DB)).With(testOptions), db: d.DB, store: mysqlstore.Webhooks(d.DB)}
	}
	d := pgtest.DB(t, maxConns)
	hc, err := postgres.New(d.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return backend{eng: hc, reg: webhook.NewRegistry(pgstore.Webhooks(d.Pool)).With(testOptions), pool: d.Pool, store: pgstore.Webhooks(d.Pool)}
}

// testOptions allow the tests' local receivers (loopback) and encrypt
// secrets with a test key.
var testOptions = webhook.Options{
	AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	SecretKey:     []byte("0123456789abcdef0123456789abcdef"),
}

// config is c on this backend's database and feed, with testOptions
// unless c has options of its own.
func (b backend) config(c webhook.Config) webhook.Config {
	c.Store, c.Events = b.store, b.eng
	if c.AllowNetworks == nil && c.SecretKey == nil {
		c.Options = testOptions
	}
	return c
}

// count is the number of rows of a table.
func (b backend) count(t *testing.T, table string) int {
	t.Helper()
	q := "SELECT count(*) FROM " + table
	var n int
	var err error
	if b.db != nil {
		err = b.db.QueryRowContext(context.Background(), q).Scan(&n)
	} else {
		err = b.pool.QueryRow(context.Background(), q).Scan(&n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// setAvailable sets a key's stock through the engine.
func (b backend) change(t *testing.T, ch holdfast.StockChange) {
	t.Helper()
	if _, err := b.eng.ChangeStock(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
}

// purge runs the engine's event purge until a batch comes back empty.
func (b backend) purge(t *testing.T) {
	t.Helper()
	type pgPurge interface {
		PurgeOnce(ctx context.Context) (int, error)
	}
	type myPurge interface {
		PurgeEventsOnce(ctx context.Context) (int, error)
	}
	for range 100 {
		var n int
		var err error
		switch e := b.eng.(type) {
		case myPurge:
			n, err = e.PurgeEventsOnce(context.Background())
		case pgPurge:
			n, err = e.PurgeOnce(context.Background())
		default:
			t.Fatalf("%T purges no events", b.eng)
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the purge never came back empty")
}
