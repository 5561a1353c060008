package pgops

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// KeyFill is one key's stock and buffer.
type KeyFill struct {
	holdfast.Key
	Strategy  holdfast.Strategy `json:"strategy"`
	PoolCap   int64             `json:"pool_cap"`
	Available int64             `json:"available"`
	Held      int64             `json:"held"`
	// Pooled is the units in the key's allocation buffer.
	Pooled int64 `json:"pooled"`
	// Activity is the units reserved or claimed on the key in the window
	// it was ranked over (ActiveKeys); 0 from HotKeys.
	Activity int64 `json:"activity"`
}

// FillPercent is how full a pool key's buffer is against what it can hold
// (its cap, or less when less stock is left). ok is false for the other
// strategies, whose buffer is the stock itself: fill means nothing there.
func (k KeyFill) FillPercent() (percent float64, ok bool) {
	if k.Strategy != holdfast.StrategyPool {
		return 0, false
	}
	want := min(max(k.Available-k.Held, 0), k.PoolCap)
	if want == 0 {
		return 100, true
	}
	return 100 * float64(k.Pooled) / float64(want), true
}

// HotKeys returns the n keys with the most units in active holds, with
// their fill; keys without active holds are not listed. defaults are the
// client's configuration (Client.Config()). Top ranks by ActiveKeys once
// it has a window.
func HotKeys(ctx context.Context, q Querier, defaults holdfast.Config, n int) ([]KeyFill, error) {
	strategy, cap := keyDefaults(defaults)
	rows, err := q.Query(ctx, statement("key_fill"), string(strategy), cap, n)
	if err != nil {
		return nil, fmt.Errorf("ops: read key fill: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyFill, error) {
		var k KeyFill
		var s string
		err := row.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &s, &k.PoolCap, &k.Available, &k.Held, &k.Pooled)
		k.Strategy = holdfast.Strategy(s)
		return k, err
	})
}

// ActivityMark is a point in the stream of key activity: the newest ids of
// reserved lines and of ledger rows. Two marks bound a window.
type ActivityMark struct {
	Lines  int64 `json:"lines"`
	Ledger int64 `json:"ledger"`
}

// ReadActivityMark reads the current mark.
func ReadActivityMark(ctx context.Context, q Querier) (ActivityMark, error) {
	var m ActivityMark
	if err := q.QueryRow(ctx, statement("activity_marks")).Scan(&m.Lines, &m.Ledger); err != nil {
		return m, fmt.Errorf("ops: read activity mark: %w", err)
	}
	return m, nil
}

// ActiveKeys returns the n keys with the most units reserved or claimed
// between the marks from and to (recent activity: the keys under load now,
// not those that hold the most), with their fill and Activity. It reads only
// the rows between the marks. A line whose transaction commits after a
// later mark was read, with an id below it, is not counted: the view is
// approximate under concurrency, never wrong about stock. defaults are the
// client's configuration (Client.Config()).
func ActiveKeys(ctx context.Context, q Querier, defaults holdfast.Config, from, to ActivityMark, n int) ([]KeyFill, error) {
	strategy, cap := keyDefaults(defaults)
	rows, err := q.Query(ctx, statement("key_activity"), from.Lines, to.Lines, from.Ledger, to.Ledger, string(strategy), cap, n)
	if err != nil {
		return nil, fmt.Errorf("ops: read key activity: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyFill, error) {
		var k KeyFill
		var s string
		err := row.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &s, &k.PoolCap, &k.Available, &k.Held, &k.Pooled, &k.Activity)
		k.Strategy = holdfast.Strategy(s)
		return k, err
	})
}

// keyDefaults are the strategy and pool cap of keys without an override:
// the client's when defaults is its Config(), else holdfast's documented
// defaults (Config.Strategy: batch; TestKeyDefaultsAreTheClients keeps the
// two in step).
func keyDefaults(c holdfast.Config) (holdfast.Strategy, int) {
	s, cap := c.Strategy, c.PoolCap
	if s == "" {
		s = holdfast.StrategyBatch
	}
	if cap <= 0 {
		cap = holdfast.PoolCapDefault
	}
	return s, cap
}

// PoolFill summarizes the pool-strategy keys.
type PoolFill struct {
	// Keys is the number of pool keys.
	Keys int `json:"keys"`
	// Low is the pool keys below the low-water mark with stock left to
	// buffer; Empty is those of them with an empty pool: the next buyer
	// refills it inline.
	Low   int `json:"low"`
	Empty int `json:"empty"`
	// Pooled and Wanted are the units buffered and the units the pools
	// would hold when full (cap, or the stock left when less).
	Pooled int64 `json:"pooled"`
	Wanted int64 `json:"wanted"`
	// LowKeys are the least-filled of the Low keys.
	LowKeys []KeyFill `json:"low_keys"`
}

// ReadPoolFill summarizes the pool keys; defaults are the client's
// configuration (strategy, pool cap, low-water percent).
func ReadPoolFill(ctx context.Context, q Querier, defaults holdfast.Config, listMax int) (*PoolFill, error) {
	strategy, cap := keyDefaults(defaults)
	low := defaults.LowWaterPercent
	if low <= 0 {
		low = 30
	}
	var p PoolFill
	var list [][]int64
	err := q.QueryRow(ctx, statement("pool_fill"), string(strategy), cap, low, listMax).
		Scan(&p.Keys, &p.Low, &p.Empty, &p.Pooled, &p.Wanted, &list)
	if err != nil {
		return nil, fmt.Errorf("ops: read pool fill: %w", err)
	}
	for _, r := range list {
		if len(r) != 7 {
			continue
		}
		p.LowKeys = append(p.LowKeys, KeyFill{Key: holdfast.Key{ShopID: r[0], ItemID: r[1], LocationID: r[2]},
			Strategy: holdfast.StrategyPool, PoolCap: r[3], Available: r[4], Held: r[5], Pooled: r[6]})
	}
	return &p, nil
}

// InlineKey is a key whose buyers paid for refills of its buffer.
type InlineKey struct {
	holdfast.Key
	Count int64     `json:"count"`
	Last  time.Time `json:"last"`
}

// InlineReplenished returns the keys that hit inline replenishment most
// (at most n) and how many keys did in all.
func InlineReplenished(ctx context.Context, q Querier, n int) ([]InlineKey, int, error) {
	rows, err := q.Query(ctx, statement("inline_replenish"), n)
	if err != nil {
		return nil, 0, fmt.Errorf("ops: read replenish_stats: %w", err)
	}
	total := 0
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (InlineKey, error) {
		var k InlineKey
		var last *time.Time
		err := row.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &k.Count, &last, &total)
		if last != nil {
			k.Last = *last
		}
		return k, err
	})
	return keys, total, err
}
