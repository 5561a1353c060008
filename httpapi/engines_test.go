package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/holdfast/holdfast/mysql/migrations"
)

// The engines the HTTP tests run on.
const (
	enginePostgres = "postgres"
	engineMariaDB  = "mariadb"
)

// engines runs test once per engine, as parallel subtests named for the
// engine: the same HTTP contract, checked on PostgreSQL and on MariaDB
// (the package's one private MariaDB server, mysqltest). test makes its
// server with newEnvOn(t, engine, …).
func engines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Helper()
	for _, name := range []string{enginePostgres, engineMariaDB} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, name)
		})
	}
}

// sqlOn runs a statement on the env's database: pg on PostgreSQL, my on
// MariaDB (the two dialects differ; the intent must not).
func (e *env) sqlOn(pg, my string, args ...any) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	if e.my != nil {
		_, err = e.my.DB.ExecContext(ctx, my, args...)
	} else {
		_, err = e.db.Pool.Exec(ctx, pg, args...)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// countsOn scans one row of counts: pg on PostgreSQL, my on MariaDB.
func (e *env) countsOn(pg, my string, dst ...any) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	if e.my != nil {
		err = e.my.DB.QueryRowContext(ctx, my).Scan(dst...)
	} else {
		err = e.db.Pool.QueryRow(ctx, pg).Scan(dst...)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// lockLevels makes every stock change wait, on either engine, until the
// returned func (also run at cleanup) releases the lock: PostgreSQL locks
// inventory_levels, MariaDB every row of it.
func (e *env) lockLevels() (release func()) {
	e.t.Helper()
	ctx := context.Background()
	var rollback func() error
	if e.my != nil {
		tx, err := e.my.DB.BeginTx(ctx, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		rollback = tx.Rollback
		rows, err := tx.QueryContext(ctx, "SELECT shop_id FROM inventory_levels FOR UPDATE")
		if err == nil {
			err = rows.Close()
		}
		if err != nil {
			_ = tx.Rollback()
			e.t.Fatal(err)
		}
	} else {
		tx, err := e.db.Pool.Begin(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		rollback = func() error { return tx.Rollback(ctx) }
		if _, err := tx.Exec(ctx, "LOCK TABLE inventory_levels IN EXCLUSIVE MODE"); err != nil {
			_ = rollback()
			e.t.Fatal(err)
		}
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = rollback() }) }
	e.t.Cleanup(release)
	return release
}

// TestMariaDBService: what the service keeps itself works on MariaDB too:
// readiness reports the MySQL schema (and its absence), the console's
// session checks, shop list and event head read mysqlstore.Service.
func TestMariaDBService(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, engineMariaDB, envOpts{})
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	r := e.expect(req{method: "GET", path: "/readyz", key: "-"}, 200, "")
	if v, _ := r.json["schema_version"].(float64); int(v) != all[len(all)-1].Version {
		t.Fatalf("readyz: %s, want schema_version %d", r.body, all[len(all)-1].Version)
	}
	// A schema missing a migration is not ready.
	e.sqlOn("", "DELETE FROM schema_migrations WHERE version = 8")
	e.expect(req{method: "GET", path: "/readyz", key: "-"}, 503, "schema_not_current")
	e.sqlOn("", "INSERT INTO schema_migrations (version, name, applied_at) VALUES (8, 'api_keys', UTC_TIMESTAMP(6))")
	e.expect(req{method: "GET", path: "/readyz", key: "-"}, 200, "")

	// The console: an admin key opens the overview, which lists the shops
	// with stock (mysqlstore.Service's shops); a shop's key does not.
	e.stock(1, 7, 5)
	e.stock(42, 7, 5)
	console := func(key string, page ...string) (int, string) {
		hr, err := http.NewRequest("GET", e.url+"/console/"+strings.Join(page, ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Authorization", "Bearer "+e.keys[key])
		res, err := e.http.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := console("admin"); code != 200 || !strings.Contains(body, `data-shop="42"`) {
		t.Fatalf("console overview with an admin key: %d, shop 42 listed: %v", code, strings.Contains(body, `data-shop="42"`))
	}
	if code, _ := console("shop1"); code == 200 {
		t.Fatalf("console overview with a shop's key: %d", code)
	}
	// The shop page shows the shop's recent events, from the feed's head
	// (read the feed once so the sequencer has numbered them).
	e.expect(req{method: "GET", path: "/v1/shops/42/events", key: "admin"}, 200, "")
	if code, body := console("admin", "shops/42"); code != 200 || !strings.Contains(body, "stock.changed") {
		t.Fatalf("console shop page: %d, its recent events shown: %v", code, strings.Contains(body, "stock.changed"))
	}
}
