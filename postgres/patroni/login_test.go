package patroni_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	migrate "github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/patroni"
)

// TestLaggingStandbyRefusesLogin: a standby that has not replayed a change
// of holdfast's role refuses its login (28P01), and pgx, like libpq, stops
// at the first host that refuses a login without trying the others. Here
// the standby's replay is paused (pg_wal_replay_pause) and holdfast's
// password is changed on the leader; the connection string names the
// standby first. This is what a standby that is behind the role's creation
// answers during a failover, and what a password rotation meets with a
// lagging standby. A plain pgx connection fails; holdfast through a Follow
// pool reads and reserves on the leader.
func TestLaggingStandbyRefusesLogin(t *testing.T) {
	ctx := context.Background()
	st, err := cluster.ClusterState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var leader, standby *patroni.Member
	for i := range st.Members {
		switch m := &st.Members[i]; {
		case m.Role == "leader":
			leader = m
		case standby == nil:
			standby = m
		}
	}
	if leader == nil || standby == nil {
		t.Fatalf("no leader and standby in %+v", st.Members)
	}

	// holdfast's schema and one stock level, through the cluster's URL.
	key := holdfast.Key{ShopID: 78, ItemID: 1, LocationID: 1}
	pool0 := followPool(t, cluster.URL())
	if _, err := migrate.Up(ctx, pool0); err != nil {
		t.Fatal(err)
	}
	hc0, err := postgres.New(pool0, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	seven := 7
	if _, err := hc0.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &seven, Reason: "test"}); err != nil {
		t.Fatal(err)
	}

	// The standby stops replaying; holdfast's password changes on the
	// leader. Both are undone at the end (the cluster is shared).
	u, _ := url.Parse(cluster.URL())
	orig, _ := u.User.Password()
	superExec(t, cluster.NodeURL(standby.Name, "postgres"), "SELECT pg_wal_replay_pause()")
	t.Cleanup(func() {
		superExec(t, cluster.SuperURL("postgres"), fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", patroni.User, orig))
		superExec(t, cluster.NodeURL(standby.Name, "postgres"), "SELECT pg_wal_replay_resume()")
	})
	rotated := "rotated" + uuid.NewString()[:8]
	superExec(t, cluster.SuperURL("postgres"), fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", patroni.User, rotated))
	dsn := fmt.Sprintf("postgres://%s:%s@%s:%d,%s:%d/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		patroni.User, rotated, standby.Host, standby.Port, leader.Host, leader.Port, patroni.Database)

	// The situation: pgx gives up at the standby.
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		conn.Close(ctx)
		t.Fatalf("pgx logged in past the paused standby %s; the test no longer shows the situation", standby.Name)
	} else if !postgres.RefusedByOneHost(err) || postgres.SQLState(err) != "28P01" {
		t.Fatalf("pgx through the paused standby %s first: %v; want its 28P01 refusal", standby.Name, err)
	}

	// holdfast gets past it: the schema check, a read and a reservation
	// reach the leader.
	pool := followPool(t, dsn)
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatalf("New through the paused standby first: %v", err)
	}
	lvl, err := hc.Level(ctx, key)
	if err != nil || lvl.Available != 7 {
		t.Fatalf("Level through the paused standby first: %+v %v, want available 7", lvl, err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	h, err := hc.Reserve(rctx, holdfast.ReserveParams{ShopID: key.ShopID, CheckoutID: uuid.New(), TTL: time.Hour,
		Lines: []holdfast.Line{{ItemID: key.ItemID, LocationID: key.LocationID, Quantity: 1}}})
	if err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("Reserve through the paused standby first: %+v %v", h, err)
	}
}

func followPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	f := postgres.Follow(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f.Attach(pool)
	return pool
}

func superExec(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
