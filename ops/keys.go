package ops

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
}

// FillPercent is how full a pool key's buffer is against what it can hold
// (its cap, or less when less stock is left); 100 for other strategies'
// keys with a full buffer.
func (k KeyFill) FillPercent() float64 {
	want := max(k.Available-k.Held, 0)
	if k.Strategy == holdfast.StrategyPool {
		want = min(want, k.PoolCap)
	}
	if want == 0 {
		return 100
	}
	return 100 * float64(k.Pooled) / float64(want)
}

// HotKeys returns the n keys with the most units in active holds, with
// their fill; keys without active holds are not listed. defaults are the
// client's default strategy and pool cap.
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

func keyDefaults(c holdfast.Config) (holdfast.Strategy, int) {
	s, cap := c.Strategy, c.PoolCap
	if s == "" {
		s = holdfast.StrategyCounter
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
