// Command claimbench runs the flash-sale demo's buyers (reserve one unit of
// one hot key, "pay" 0–5 ms outside any transaction, then claim, release or
// abandon) against the library on a durable PostgreSQL (or, with -engine
// mariadb, a private durable MariaDB of its own per run) and prints the
// latency of reservations and claims: the claims' tail is what issue #29
// item 6 is about, and `holdfast demo` reports reservations only. Each run
// uses a fresh database of a shared embedded cluster in -data (or
// DATABASE_URL's server), so two builds of this command can be run
// alternately against the same server (docs/PERFORMANCE.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"database/sql"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	mysqlmigrations "github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

func main() {
	data := flag.String("data", "/tmp/claimbench-pg", "shared embedded cluster's data directory (ignored with DATABASE_URL)")
	buyers := flag.Int("buyers", 2000, "buyers")
	units := flag.Int("units", 500, "units of the hot key")
	conc := flag.Int("concurrency", 64, "buyers at once")
	pay := flag.Float64("pay", 0.6, "share of holders that claim")
	fail := flag.Float64("fail", 0.2, "share of holders that release")
	label := flag.String("label", "", "label printed with the result")
	eng := flag.String("engine", "postgres", "postgres or mariadb")
	flag.Parse()
	var err error
	if *eng == "mariadb" || *eng == "mysql" {
		err = runMariaDB(*buyers, *units, *conc, *pay, *fail, *label)
	} else {
		err = run(*data, *buyers, *units, *conc, *pay, *fail, *label)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimbench:", err)
		os.Exit(1)
	}
}

func run(data string, buyers, units, conc int, pay, fail float64, label string) error {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		c, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: data, Shared: true, Durable: true})
		if err != nil {
			return err
		}
		defer c.Stop(ctx)
		url = c.URL("postgres")
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("claimbench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	defer func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	}()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.Database = name
	cfg.MaxConns = int32(conc + 8)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return err
	}
	return sale(ctx, hc, buyers, units, conc, pay, fail, label)
}

// runMariaDB runs the sale on a private durable MariaDB of its own
// (READ COMMITTED, as holdfast's own servers start it).
func runMariaDB(buyers, units, conc int, pay, fail float64, label string) error {
	ctx := context.Background()
	c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{Durable: true, ReadCommitted: true})
	if err != nil {
		return err
	}
	defer c.Stop(ctx)
	admin, err := sql.Open("mysql", c.DSN(""))
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE claimbench"); err != nil {
		return err
	}
	dc := c.Config("claimbench")
	mysql.Configure(dc)
	conn, err := mysql.NewConnector(dc)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(conc + 8)
	db.SetMaxIdleConns(conc + 8)
	if _, err := mysqlmigrations.Up(ctx, db); err != nil {
		return err
	}
	hc, err := mysql.New(db, holdfast.Config{})
	if err != nil {
		return err
	}
	defer hc.Stop(ctx)
	return sale(ctx, hc, buyers, units, conc, pay, fail, label)
}

// sale runs the buyers against hc and prints the result line.
func sale(ctx context.Context, hc holdfast.Engine, buyers, units, conc int, pay, fail float64, label string) error {
	key := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := hc.SetStrategy(ctx, key, holdfast.StrategyBatch, 0); err != nil {
		return err
	}
	if _, err := hc.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &units, Reason: "claimbench"}); err != nil {
		return err
	}

	var mu sync.Mutex
	var resLat, claimLat []time.Duration
	var claimed, errs atomic.Int64
	work := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				id := uuid.New()
				t0 := time.Now()
				_, err := hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, TTL: time.Minute,
					Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
				d := time.Since(t0)
				mu.Lock()
				resLat = append(resLat, d)
				mu.Unlock()
				if err != nil {
					continue
				}
				time.Sleep(time.Duration(rand.N(5)) * time.Millisecond)
				switch r := rand.Float64(); {
				case r < pay:
					t0 := time.Now()
					if _, err := hc.Claim(ctx, 1, id); err != nil {
						errs.Add(1)
						continue
					}
					d := time.Since(t0)
					claimed.Add(1)
					mu.Lock()
					claimLat = append(claimLat, d)
					mu.Unlock()
				case r < pay+fail:
					if _, err := hc.Release(ctx, 1, id); err != nil {
						errs.Add(1)
					}
				}
			}
		}()
	}
	for range buyers {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	rep, err := hc.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	lvl, err := hc.Level(ctx, key)
	if err != nil {
		return err
	}
	ok := rep.OK() && lvl.Available == units-int(claimed.Load())
	fmt.Printf("%s\tsale %.2fs\tclaims %d (%.0f/s)\tclaim p50 %s p99 %s max %s\treserve p50 %s p99 %s\terrors %d\tinvariant %v\n",
		label, elapsed.Seconds(), claimed.Load(), float64(claimed.Load())/elapsed.Seconds(),
		pct(claimLat, 50), pct(claimLat, 99), pct(claimLat, 100), pct(resLat, 50), pct(resLat, 99), errs.Load(), ok)
	if !ok {
		return fmt.Errorf("invariant broken: %s; available %d, claimed %d of %d", rep, lvl.Available, claimed.Load(), units)
	}
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := min(len(d)-1, len(d)*p/100)
	return d[i].Round(100 * time.Microsecond)
}
