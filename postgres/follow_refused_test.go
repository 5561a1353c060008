package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestFollowPassesOverARefusedLogin: the first host of a multi-host
// connection string refuses the login (a second real PostgreSQL server
// that does not know this password: 28P01, what a standby answers before
// it has replayed CREATE ROLE) and the second serves. pgx stops at the
// refusal, as libpq does; holdfast's reads through a Follow pool still
// reach the second host, and the refused host is tried last afterwards.
// When every host refuses, the answer is the typed LoginRefusedError, not
// ErrUnavailable: a wrong password is still reported as one.
func TestFollowPassesOverARefusedLogin(t *testing.T) {
	db := pgtest.DB(t, 4)
	ctx := context.Background()
	other, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Stop(context.Background()) })
	// Named "localhost", not 127.0.0.1: Follow ties the address a
	// connection reached to the host name the string gives.
	refusing := "localhost:" + itoa(uint16(other.Port()))

	u, err := url.Parse(db.URL)
	if err != nil || u.Host == "" {
		t.Skipf("needs a URL-form database URL: %v", err)
	}
	serving := u.Host
	u.Host = refusing + "," + serving
	multi := u.String()

	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	single, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	seven := 7
	if _, err := single.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &seven, Reason: "test"}); err != nil {
		t.Fatal(err)
	}

	// The situation: pgx gives up at the first host's refusal.
	if conn, err := pgx.Connect(ctx, multi); err == nil {
		conn.Close(ctx)
		t.Fatalf("pgx reached the second host past a refused login; this test no longer shows the situation")
	} else if postgres.SQLState(err) != "28P01" || !postgres.RefusedByOneHost(err) {
		t.Fatalf("pgx through a refusing first host: %v (SQLSTATE %q, RefusedByOneHost %v), want 28P01 from one host",
			err, postgres.SQLState(err), postgres.RefusedByOneHost(err))
	}

	pool, f := followPool(t, multi)
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lvl, err := hc.Level(ctx, k)
	if err != nil {
		t.Fatalf("Level through a refusing first host and a serving second: %v", err)
	}
	if lvl.Available != 7 {
		t.Fatalf("available %d, want 7", lvl.Available)
	}
	// The refusing host now comes last: new connections go straight to
	// the serving one.
	pool.Reset()
	for range 3 {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("a new connection after the refusal: %v", err)
		}
		conn.Release()
		pool.Reset()
	}
	_ = f

	// Every host refuses (the wrong password on both): a verdict, typed
	// and not unavailable, carrying the server's SQLSTATE.
	wrong := strings.Replace(multi, url.QueryEscape(mustPassword(t, u)), "wrong-pw", 1)
	if wrong == multi {
		t.Fatal("could not change the password in the URL")
	}
	pool2, _ := followPool(t, wrong)
	hc2, err := postgres.New(pool2, holdfast.Config{}) // its schema check logs in
	if err == nil {
		_, err = hc2.Level(ctx, k)
	}
	var lre *postgres.LoginRefusedError
	switch {
	case err == nil:
		t.Fatal("New and Level with a wrong password on every host succeeded")
	case errors.Is(err, holdfast.ErrUnavailable):
		t.Fatalf("a wrong password on every host answered unavailable: %v", err)
	case !errors.As(err, &lre) || postgres.SQLState(err) != "28P01" || len(lre.Hosts) != 2 || lre.Hosts[0] != refusing:
		t.Fatalf("a wrong password on every host: %v, want LoginRefusedError naming both hosts, SQLSTATE 28P01", err)
	}
	t.Log(err)
}

func followPool(t *testing.T, dsn string) (*pgxpool.Pool, *postgres.Follower) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	f := postgres.Follow(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f.Attach(pool)
	return pool, f
}

func mustPassword(t *testing.T, u *url.URL) string {
	p, ok := u.User.Password()
	if !ok || p == "" {
		t.Skip("the database URL carries no password")
	}
	return p
}
