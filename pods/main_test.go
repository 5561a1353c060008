package pods_test

import (
	"context"
	"fmt"
	"github.com/google/uuid"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres"
	migrate "github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/podmap"
)

// Two private PostgreSQL servers shared by the tests (pods on both, the
// control database on the first), and a private MariaDB (mysqltest) for a
// pod on the other engine; the outage tests start a server of their own,
// which they stop.
var serverA, serverB *server

func TestMain(m *testing.M) { os.Exit(run(mysqltest.Runner(m))) }

func run(m interface{ Run() int }) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if serverA, err = startServer(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pods tests:", err)
		return 1
	}
	defer serverA.stop()
	if serverB, err = startServer(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pods tests:", err)
		return 1
	}
	defer serverB.stop()
	return m.Run()
}

// server is a private PostgreSQL cluster with a migrated template database.
type server struct {
	c        *pgcluster.Cluster
	template string
	seq      atomic.Int64
}

func startServer(ctx context.Context) (*server, error) {
	return startServerWith(ctx, pgcluster.Options{Logical: true})
}

func startServerWith(ctx context.Context, opts pgcluster.Options) (*server, error) {
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &server{c: c, template: "pods_tmpl"}
	if err := exec(ctx, c.URL("postgres"), "CREATE DATABASE "+s.template); err != nil {
		s.stop()
		return nil, err
	}
	pool, err := pgxpool.New(ctx, c.URL(s.template))
	if err != nil {
		s.stop()
		return nil, err
	}
	defer pool.Close()
	if _, err := migrate.Up(ctx, pool); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) stop() { _ = s.c.Stop(context.Background()) }

// db creates a fresh database for t (migrated, or empty), dropped at the
// end unless the server is gone by then.
func (s *server) db(t testing.TB, migrated bool) (name string, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	name = fmt.Sprintf("t_%d", s.seq.Add(1))
	clause := ""
	if migrated {
		clause = " TEMPLATE " + s.template
	}
	if err := exec(ctx, s.c.URL("postgres"), "CREATE DATABASE "+name+clause); err != nil {
		t.Fatalf("create database: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(s.c.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		_ = exec(context.Background(), s.c.URL("postgres"), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return name, pool
}

// kill stops the server the way a crash or an operator would, keeping its
// files so restart brings it back on the same port.
func (s *server) kill(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.c.DataDir(), "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil { // fast shutdown
		t.Fatal(err)
	}
	select {
	case <-s.c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30s")
	}
}

func (s *server) restart(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.c.Restart(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
}

func exec(ctx context.Context, u, sql string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// xacts is the server's count of transactions committed and rolled back in
// database name, read from another database (the reading itself is not
// counted in name).
func (s *server) xacts(t testing.TB, name string) int64 {
	t.Helper()
	ctx := context.Background()
	// Statements that touched the pod's tables (scans, index scans, rows
	// written), read in the pod's own database. Not pg_stat_database's
	// commits: a pool's reconnect and autovacuum commit transactions there
	// without any operation of holdfast's (seen: 2 on an idle pod under
	// load), and the read itself touches no user table.
	conn, err := pgx.Connect(ctx, s.c.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0) + n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
		FROM pg_stat_user_tables`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// podDB is one pod of a test: its server, database, pool and engine.
type podDB struct {
	name   string
	srv    *server
	dbName string
	pool   *pgxpool.Pool
	eng    *postgres.Client
}

func newPod(t testing.TB, name string, srv *server) *podDB {
	t.Helper()
	return newPodWith(t, name, srv, holdfast.Config{})
}

func newPodWith(t testing.TB, name string, srv *server, cfg holdfast.Config) *podDB {
	t.Helper()
	dbName, pool := srv.db(t, true)
	eng, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &podDB{name: name, srv: srv, dbName: dbName, pool: pool, eng: eng}
}

func (p *podDB) pod() pods.Pod {
	return pods.Pod{Name: p.name, Engine: p.eng, Ping: p.pool.Ping}
}

// newMap is a fresh control database on server A with the map migrated.
func newMap(t testing.TB) *podmap.Map {
	t.Helper()
	_, pool := serverA.db(t, false)
	if _, err := podmap.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return podmap.New(pool)
}

func newRouter(t testing.TB, m pods.Map, cfg pods.Config, ps ...*podDB) *pods.Router {
	t.Helper()
	list := make([]pods.Pod, len(ps))
	for i, p := range ps {
		list[i] = p.pod()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r, err := pods.New(context.Background(), m, list, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	return r
}

// stock sets stock of item 1 at location 1 of shop.
func stock(t testing.TB, e holdfast.Engine, shop int64, n int) {
	t.Helper()
	if _, err := e.ChangeStock(context.Background(), holdfast.StockChange{Key: key(shop), Set: &n, Reason: "test"}); err != nil {
		t.Fatalf("stock shop %d: %v", shop, err)
	}
}

func key(shop int64) holdfast.Key { return holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1} }

func cart(shop int64) holdfast.ReserveParams {
	return holdfast.ReserveParams{ShopID: shop, CheckoutID: newID(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Minute}
}

func newID() uuid.UUID { return uuid.New() }

// signalAll sends sig to the server's postmaster and every child of it
// (its backends and background processes): SIGSTOP makes a server that
// hangs with its connections open — a frozen VM, a network that drops
// packets — rather than one that refuses.
func (s *server) signalAll(t testing.TB, sig syscall.Signal) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.c.DataDir(), "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{pm}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		rest := string(st[strings.LastIndexByte(string(st), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pm) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}
