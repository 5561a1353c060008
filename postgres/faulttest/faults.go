package faulttest

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Faults the Env injects: killing backends (at random, on a schedule, right
// before COMMIT), and waiting for the engine to go idle after them.

// QuiesceBound bounds how long Quiesce waits for the engine to go idle.
const QuiesceBound = time.Minute

// Quiesce waits until nothing the engine started is still running — no
// connection of its pool in use, no backend of its connections in the test
// database busy or in a transaction — and marks the history there (see
// History.Mark), which bounds the windows of operations whose outcome is
// unknown. Call it with no operation in flight. It polls (an event to wait
// for, not a time window) up to QuiesceBound; past that the history gets no
// mark and those windows run to the history's end.
func (e *Env) Quiesce(ctx context.Context) {
	deadline := time.Now().Add(QuiesceBound)
	for {
		busy := int(e.Pool.Stat().AcquiredConns())
		if busy == 0 {
			var n int
			err := e.Admin.QueryRow(ctx, `
SELECT count(*) FROM pg_stat_activity
WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
  AND coalesce(application_name, '') <> $2 AND state IS DISTINCT FROM 'idle'`, e.DB.Name, appAdmin).Scan(&n)
			if err != nil {
				// A pooled connection a server restart closed: ask again.
				n = -1
			}
			busy = n
		}
		if busy == 0 {
			if e.Hist != nil {
				e.Hist.Mark()
			}
			return
		}
		if time.Now().After(deadline) {
			e.T.Logf("quiesce: the engine still had %d busy connections or backends (-1: could not ask) after %v; no quiescence mark", busy, QuiesceBound)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// KillRandom terminates one random backend of the engine's connections in
// the test database; it reports whether there was one.
func (e *Env) KillRandom(ctx context.Context) bool {
	var ok bool
	err := e.Admin.QueryRow(ctx, `
SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM (
  SELECT pid FROM pg_stat_activity
  WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
    AND coalesce(application_name, '') <> $2
  ORDER BY random() LIMIT 1) v`, e.DB.Name, appAdmin).Scan(&ok)
	if err == nil && ok {
		e.Tally.Inject("backend terminated at random", 1)
	}
	return ok
}

// StartKiller terminates a random engine backend at random intervals
// (uniform in [0, 2*mean]) until the returned stop is called.
func (e *Env) StartKiller(mean time.Duration, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(seed, 7))
	go func() {
		defer close(done)
		for {
			t := time.NewTimer(time.Duration(rng.Int64N(int64(2*mean) + 1)))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			e.KillRandom(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

// KillBeforeCommit terminates the backend of a random fraction (rate) of
// transactions after their last statement, right before COMMIT is sent,
// and waits for the backend to exit. Through PgBouncer the client's
// backend is not known by pid: an idle-in-transaction backend of the
// database is terminated instead.
func (e *Env) KillBeforeCommit(rate float64, seed uint64, bouncer bool) {
	if rate <= 0 {
		e.Hook.SetBeforeCommit(nil)
		return
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 11))
	e.Hook.SetBeforeCommit(func(ctx context.Context, conn *pgx.Conn) {
		mu.Lock()
		hit := rng.Float64() < rate
		mu.Unlock()
		if !hit {
			return
		}
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var ok bool
		var err error
		if bouncer {
			err = e.Admin.QueryRow(kctx, `
SELECT coalesce(bool_or(pg_terminate_backend(pid, 5000)), false) FROM (
  SELECT pid FROM pg_stat_activity
  WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'idle in transaction'
    AND coalesce(application_name, '') <> $2
  ORDER BY random() LIMIT 1) v`, e.DB.Name, appAdmin).Scan(&ok)
		} else {
			err = e.Admin.QueryRow(kctx, "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID()).Scan(&ok)
		}
		if err == nil && ok {
			e.Tally.Inject("backend terminated before COMMIT", 1)
		}
	})
}
