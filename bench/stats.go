package bench

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The database's side of a run: a connection for statistics, samples of
// its counters during a run, and dead tuples after it.

// statConn opens a connection for reading the run database's backend pids,
// or returns nil.
func (r *runner) statConn(ctx context.Context) *pgx.Conn {
	c, err := pgx.Connect(ctx, r.o.URL)
	if err != nil {
		return nil
	}
	return c
}

func closeConn(c *pgx.Conn) {
	if c != nil {
		_ = c.Close(context.Background())
	}
}

// sample polls pg_stat_activity for db's busy backends every
// Options.WaitSample between from and to (or until ctx ends) and sends the
// average backends per wait event. A sampler that cannot connect sends nil.
func (r *runner) sample(ctx context.Context, db string, from, to time.Time) <-chan map[string]float64 {
	out := make(chan map[string]float64, 1)
	go func() {
		conn, err := pgx.Connect(ctx, r.o.URL)
		if err != nil {
			out <- nil
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		q := query("waits")
		sums := map[string]float64{}
		n := 0
		t := time.NewTicker(r.o.WaitSample)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
			case now := <-t.C:
				if now.Before(from) {
					continue
				}
				if now.Before(to) {
					rows, err := conn.Query(ctx, q, db)
					if err == nil {
						for rows.Next() {
							var ev string
							var c int
							if rows.Scan(&ev, &c) == nil {
								sums[ev] += float64(c)
							}
						}
						rows.Close()
						n++
					}
					continue
				}
			}
			break
		}
		if n == 0 {
			out <- nil
			return
		}
		for k, v := range sums {
			sums[k] = math.Round(v/float64(n)*100) / 100
		}
		out <- sums
	}()
	return out
}

// flushStats makes every idle connection of pool flush its table
// statistics, so the dead-tuple counts read next are current.
func flushStats(ctx context.Context, pool *pgxpool.Pool) {
	for _, c := range pool.AcquireAllIdle(ctx) {
		_, _ = c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		c.Release()
	}
}

func deadTuples(ctx context.Context, pool *pgxpool.Pool, tables []string) (dead, created int64, err error) {
	err = pool.QueryRow(ctx, query("stats_tables"), tables).Scan(&dead, &created)
	return dead, created, err
}
