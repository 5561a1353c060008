package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestScale is the scale run of issue #15 item 4: a database with many keys
// and active holds, loaded with generate_series (not the API), then the
// sweeper against a steady expiry rate, one background replenisher pass,
// the full replenish walk, the sold-out check and the refill on a key with
// many holds, and spread reservations against the same at 10,000 keys.
// Never in CI: it runs only with HOLDFAST_SCALE=1, prints its figures and
// asserts only that the work was done (speed is read, not asserted).
//
//	HOLDFAST_SCALE=1 go test -run TestScale -timeout 3h -v ./postgres/
//
// Sizes (environment): HOLDFAST_SCALE_KEYS (1,000,000), HOLDFAST_SCALE_HOLDS
// (10,000,000), HOLDFAST_SCALE_HOT (holds on the one hot key, HOLDS/20),
// HOLDFAST_SCALE_RATE (expiries per second, 5,000), HOLDFAST_SCALE_SWEEP
// (seconds of expiries, 30), HOLDFAST_SCALE_CLIENTS (spread clients, 16),
// HOLDFAST_SCALE_SPREAD (seconds per spread run, 10).
func TestScale(t *testing.T) {
	if os.Getenv("HOLDFAST_SCALE") != "1" {
		t.Skip("the scale run: set HOLDFAST_SCALE=1 (not for CI)")
	}
	env := func(name string, def int) int {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive integer", name, v)
			}
			return n
		}
		return def
	}
	keys := env("HOLDFAST_SCALE_KEYS", 1_000_000)
	holds := env("HOLDFAST_SCALE_HOLDS", 10_000_000)
	hot := env("HOLDFAST_SCALE_HOT", holds/20)
	rate := env("HOLDFAST_SCALE_RATE", 5_000)
	sweepSecs := env("HOLDFAST_SCALE_SWEEP", 30)
	clients := env("HOLDFAST_SCALE_CLIENTS", 16)
	spreadSecs := env("HOLDFAST_SCALE_SPREAD", 10)
	ctx := context.Background()
	logf := func(format string, args ...any) {
		fmt.Printf("scale %s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
	logf("keys %d, holds %d (hot key %d), expiries %d/s for %d s, spread %d clients %d s",
		keys, holds, hot, rate, sweepSecs, clients, spreadSecs)

	big := pgtest.DB(t, clients+8)
	small := pgtest.DB(t, clients+8)
	const smallKeys = 10_000
	scaleLoad(t, big.Pool, keys, holds, hot, logf)
	// The same holds per key on 10,000 keys: only the size differs.
	scaleLoad(t, small.Pool, smallKeys, max(holds/(keys/smallKeys), smallKeys), 0, logf)

	// The big client's clock is the real one shifted by shift: the
	// sweeper's expiry schedule is written in the future, then the clock
	// jumps to just before it, so that writing it (slow at this size) does
	// not eat into it.
	var shift atomic.Int64
	obs := &scaleObserver{Observer: holdfast.Config{}.WithDefaults().Observer}
	bigC, err := New(big.Pool, holdfast.Config{Observer: obs, Now: func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	smallC, err := New(small.Pool, holdfast.Config{Now: time.Now}) // the same clock path as bigC
	if err != nil {
		t.Fatal(err)
	}

	// Spread: one-unit reservations on random keys (the hot key excluded),
	// alternating sizes so that the machine's load hits both alike.
	var p50 = map[string][]time.Duration{}
	for round := range 2 {
		for _, s := range []struct {
			name string
			c    *Client
			n    int
		}{{"10k keys", smallC, smallKeys}, {fmt.Sprintf("%d keys", keys), bigC, keys}} {
			lat := scaleSpread(t, s.c, s.n, clients, time.Duration(spreadSecs)*time.Second)
			q := func(f float64) time.Duration { return lat[int(f*float64(len(lat)-1))] }
			logf("spread %-12s round %d: %d holds, %.0f holds/s, p50 %v, p99 %v", s.name, round+1, len(lat),
				float64(len(lat))/float64(spreadSecs), q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond))
			p50[s.name] = append(p50[s.name], q(0.5))
		}
	}

	// The sold-out check on the hot key: a reservation of more than it
	// has left (sellable.sql, or the sold-out hint's sold_out.sql).
	if hot > 0 {
		// 100 units beyond its holds (scaleLoad): 101 is short.
		const lvl = 101
		var times []time.Duration
		for range 20 {
			start := time.Now()
			_, err := bigC.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: lvl}}})
			times = append(times, time.Since(start))
			if !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("sold-out check: %v, want ErrInsufficientStock", err)
			}
		}
		slices.Sort(times)
		logf("sold-out check on the hot key (%d holds): median %v, max %v (20 reservations)", hot, times[10].Round(time.Microsecond), times[19].Round(time.Microsecond))

		// The refill on the hot key: its buffer emptied, a one-unit
		// reservation comes up short and refills (refill.sql) before it
		// takes.
		times = times[:0]
		for range 10 {
			if _, err := big.Pool.Exec(ctx, "UPDATE inventory_counters SET units = 0 WHERE shop_id = 1 AND inventory_item_id = 1 AND location_id = 1"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := bigC.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
				t.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		logf("reserve with refill on the hot key: median %v, max %v (10 reservations)", times[5].Round(time.Microsecond), times[9].Round(time.Microsecond))
	}

	// One background replenisher pass: a full batch of changed keys, the
	// hot key among them.
	engine.ForgetChanged(bigC.engineClient)
	engine.NoteChanged(bigC.engineClient, 1, []holdfast.Line{{ItemID: 1, LocationID: 1}})
	for i := range ReplenishBatch - 1 {
		engine.NoteChanged(bigC.engineClient, 1, []holdfast.Line{{ItemID: int64(2 + i*(keys-2)/ReplenishBatch), LocationID: 1}})
	}
	start := time.Now()
	if _, err := engine.ReplenishChangedOnce(bigC.engineClient, ctx); err != nil {
		t.Fatal(err)
	}
	logf("background replenisher pass (%d changed keys, the hot key among them): %v", ReplenishBatch, time.Since(start).Round(time.Microsecond))

	// The full walk (Client.Replenish, operators' on-demand pass).
	start = time.Now()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				logf("  full replenish walk running, %v", time.Since(start).Round(time.Second))
			}
		}
	}()
	_, err = bigC.Replenish(ctx)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	logf("full replenish walk over %d keys: %v", keys, time.Since(start).Round(time.Millisecond))

	// The sweeper against rate expiries per second for sweepSecs: holds
	// spread over every key (the hot key's share included) set to expire
	// one after another from base, then the clock moved to 3 s before
	// base and the client's own maintenance (Start) sweeps them. Sampled
	// every second: how far the oldest unswept expiry lags behind now.
	n := rate * sweepSecs
	if n > holds {
		t.Fatalf("%d expiries need at least as many holds, have %d", n, holds)
	}
	base := time.Now().Add(10 * time.Minute)
	tag, err := big.Pool.Exec(ctx, `
UPDATE holds h SET expires_at = $4::timestamptz + (x.i::float8 / $2::int) * interval '1 second'
FROM (SELECT j, (j - 1) / greatest($3::int / $1::int, 1) AS i FROM generate_series(1, $3::int, greatest($3::int / $1::int, 1)) j
      LIMIT $1::int) x
WHERE h.shop_id = 1 AND h.checkout_id = md5(x.j::text)::uuid`, n, rate, holds, base)
	if err != nil {
		t.Fatal(err)
	}
	expiring := int(tag.RowsAffected())
	if _, err := big.Pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()"); err != nil {
		logf("pg_stat_statements: %v", err)
	}
	// The events the run so far wrote (the spread's holds, each a
	// hold.created) are sequenced first, as a running service's sequencer
	// would have: the sweep below measures the steady state, in which it
	// still sequences one event per expiry.
	for total := 0; ; {
		q, err := bigC.SequenceEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if total += q; q == 0 {
			logf("sequenced the %d events written so far", total)
			break
		}
	}
	shift.Store(int64(base.Add(-3 * time.Second).Sub(time.Now())))
	logf("sweeper: %d holds expiring at %d/s, from 3 s after the clock moved", expiring, rate)
	bigC.Start(ctx)
	var worst float64
	var backlogMax int
	tick := time.NewTicker(time.Second) // sampling a running system
	defer tick.Stop()
	for s := 0; ; s++ {
		<-tick.C
		// Due by now (the schedule) less expired (the sweeper's own count);
		// the lag is the oldest unswept expiry (one probe of holds_expiry).
		now := time.Now().Add(time.Duration(shift.Load())) // bigC's clock
		ended := int(obs.expired.Load())
		backlog := max(0, min(expiring, int(now.Sub(base).Seconds()*float64(rate)))-ended)
		var oldest *time.Time
		if err := big.Pool.QueryRow(ctx, "SELECT min(expires_at) FROM holds WHERE status = 'held'").Scan(&oldest); err != nil {
			t.Fatal(err)
		}
		var lag float64
		if oldest != nil && oldest.Before(now) {
			lag = now.Sub(*oldest).Seconds()
		}
		worst, backlogMax = max(worst, lag), max(backlogMax, backlog)
		if s%5 == 4 || ended >= expiring {
			logf("  sweeper at %2ds: %d expired, backlog %d, oldest unswept %.2fs ago", s+1, ended, backlog, lag)
		}
		if ended >= expiring || s > 4*sweepSecs+60 {
			break
		}
	}
	if err := bigC.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	logf("sweeper: worst lag %.2fs, largest backlog %d (expiries at %d/s)", worst, backlogMax, rate)
	rows, err := big.Pool.Query(ctx, `SELECT round(total_exec_time)::bigint, calls, left(regexp_replace(query, '\s+', ' ', 'g'), 90)
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC LIMIT 8`)
	if err == nil {
		for rows.Next() {
			var ms, calls int64
			var q string
			if err := rows.Scan(&ms, &calls, &q); err == nil {
				logf("  during the sweep: %7d ms in %6d calls: %s", ms, calls, q)
			}
		}
		rows.Close()
	}
	logf("spread p50 %s over 10k keys: %.2f (round 1), %.2f (round 2)", fmt.Sprintf("%d keys", keys),
		float64(p50[fmt.Sprintf("%d keys", keys)][0])/float64(p50["10k keys"][0]),
		float64(p50[fmt.Sprintf("%d keys", keys)][1])/float64(p50["10k keys"][1]))
}

// scaleLoad fills an empty migrated database with keys keys (shop 1,
// location 1, items 1..keys, strategy default) and holds one-unit held
// holds: hot of them on item 1, the rest round robin over items 2..keys.
// Each key has 100 units beyond its holds, 50 of them in its counter.
// Triggers are off while loading (no events); held_counts, when the schema
// has it, is filled from the lines.
func scaleLoad(t *testing.T, pool *pgxpool.Pool, keys, holds, hot int, logf func(string, ...any)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	start := time.Now()
	exec("SET session_replication_role = replica")
	exec("SET maintenance_work_mem = '256MB'")
	// held(i): hot for item 1; the rest spread round robin over 2..keys.
	const heldOf = `CASE WHEN i = 1 THEN $3::bigint
	     ELSE ($2::bigint - $3::bigint) / ($1::bigint - 1) + CASE WHEN i - 2 < ($2::bigint - $3::bigint) % ($1::bigint - 1) THEN 1 ELSE 0 END END`
	exec(`INSERT INTO inventory_levels (shop_id, inventory_item_id, location_id, available)
SELECT 1, i, 1, `+heldOf+` + 100 FROM generate_series(1, $1::bigint) i`, keys, holds, hot)
	exec(`INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason)
SELECT shop_id, inventory_item_id, location_id, available, available, 'scale' FROM inventory_levels`)
	exec(`INSERT INTO inventory_counters (shop_id, inventory_item_id, location_id, slot, units)
SELECT shop_id, inventory_item_id, location_id, 0, 50 FROM inventory_levels`)
	logf("load: %d keys in %v", keys, time.Since(start).Round(time.Millisecond))
	const chunk = 1_000_000
	// Hold j is on item 1 when j <= hot, else on 2 + (j - hot - 1) % (keys - 1).
	const keyOf = `CASE WHEN j <= $3::bigint THEN 1 ELSE 2 + (j - $3::bigint - 1) % ($4::bigint - 1) END`
	for lo := 1; lo <= holds; lo += chunk {
		hi := min(lo+chunk-1, holds)
		exec(`INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
SELECT md5(j::text)::uuid, 1, 'held', jsonb_build_array(jsonb_build_object('item_id', `+keyOf+`, 'location_id', 1, 'quantity', 1)),
       now(), now() + interval '1 day', now() + interval '2 days'
FROM generate_series($1::bigint, $2::bigint) j`, lo, hi, hot, keys)
		exec(`INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
SELECT 1, `+keyOf+`, 1, md5(j::text)::uuid, 1, now() + interval '1 day', now()
FROM generate_series($1::bigint, $2::bigint) j`, lo, hi, hot, keys)
		logf("load: %d of %d holds, %v", hi, holds, time.Since(start).Round(time.Second))
	}
	var hasCounts bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('held_counts') IS NOT NULL").Scan(&hasCounts); err != nil {
		t.Fatal(err)
	}
	if hasCounts {
		exec(`INSERT INTO held_counts (shop_id, inventory_item_id, location_id, stripe, held)
SELECT shop_id, inventory_item_id, location_id, 0, sum(quantity) FROM reserved_quantities GROUP BY 1, 2, 3`)
	}
	exec("RESET session_replication_role")
	exec("VACUUM ANALYZE")
	logf("load: done in %v", time.Since(start).Round(time.Second))
}

// scaleSpread runs clients one-unit reservations on random keys 2..keys for
// d and returns their latencies, sorted.
func scaleSpread(t *testing.T, c *Client, keys, clients int, d time.Duration) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	var failed error
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			var lat []time.Duration
			for ctx.Err() == nil {
				item := int64(2 + r.IntN(keys-1))
				start := time.Now()
				_, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 1}}, TTL: time.Hour})
				if ctx.Err() != nil {
					break
				}
				if err != nil && !errors.Is(err, holdfast.ErrInsufficientStock) {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				lat = append(lat, time.Since(start))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	if len(all) == 0 {
		t.Fatal("spread: no reservation finished")
	}
	slices.Sort(all)
	return all
}

// scaleObserver counts the holds the sweeper expired.
type scaleObserver struct {
	holdfast.Observer // the default (no-op) observer for what is not counted
	expired           atomic.Int64
}

func (o *scaleObserver) Expired(n int) { o.expired.Add(int64(n)) }
