package postgres

import (
	"context"
	"math/rand/v2"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/jackc/pgx/v5"
)

// strategyRow is one allocation strategy as this engine runs it: the one
// place a strategy is declared. Adding a strategy adds its name to the
// shared vocabulary (types.go, strategies.go), a row here, its take
// statement in sql/, and its name to the schema's CHECK (a migration);
// TestStrategiesMatchSchema and TestStrategyTable hold them together.
// The refill (sql/refill.sql) and the replenisher (sql/replenish_scan.sql)
// read a key's strategy from its row and shape its buffer by the same two
// columns: pool rows, or counters (rows of them: Config.Slots when
// slotted, batchStripes for a batch key, else one).
type strategyRow struct {
	name holdfast.Strategy
	// take is the fast take's statement, sql/<take>.sql, with arguments
	// (shop, item, location, quantity[, slot]).
	take string
	// slotted: the buffer is Config.Slots counter rows per key, and a take
	// starts at a random one of them.
	slotted bool
	// striped: the buffer is batchStripes counter rows per key, one per
	// stripe of the combiner (engine.CombineRunnersMax), so that the
	// batches of a key running at once take from rows of their own
	// (combine.go); a plain take tries a random one first
	// (take_stripe.sql).
	striped bool
	// pooled: the buffer is one row per unit (sql/take_pool*.sql,
	// shrink_pool.sql), taken with SKIP LOCKED and, when the key's locks
	// are held, waited for (takePoolWait); otherwise it is counter rows,
	// gathered under the key's lock (gather).
	pooled bool
	// combines: the key's contended one-line reservations from one process
	// join combined batches (combine.go).
	combines bool
}

var strategyTable = [...]strategyRow{
	{name: holdfast.StrategyCounter, take: "take_counter"},
	{name: holdfast.StrategyBatch, take: "take_stripe", combines: true, striped: true},
	{name: holdfast.StrategyPool, take: "take_pool", pooled: true},
	{name: holdfast.StrategySlots, take: "take_slot", slotted: true},
}

// strategyOf returns s's row; an unknown name (a row written by a newer
// binary) runs as the counter, whose take finds nothing and sends the
// reservation to the locked path.
func strategyOf(s holdfast.Strategy) *strategyRow {
	for i := range strategyTable {
		if strategyTable[i].name == s {
			return &strategyTable[i]
		}
	}
	return &strategyTable[0]
}

// queueTake queues line l's fast take from its key's buffer on b. A strict
// take that comes up short raises HF010 (holdfast_refuse) instead of
// answering fewer units, so that the pipeline's later statements do not run.
func (c *Client) queueTake(ctx context.Context, b *pgx.Batch, route string, s holdfast.Strategy, shop int64, l holdfast.Line, strict bool) {
	row := strategyOf(s)
	if row.slotted || row.striped {
		b.Queue(c.q(ctx, route, row.take), shop, l.ItemID, l.LocationID, l.Quantity, rand.N(row.rows(c.cfg)), strict)
		return
	}
	b.Queue(c.q(ctx, route, row.take), shop, l.ItemID, l.LocationID, l.Quantity, strict)
}

// batchStripes is the counter rows of a batch key: one per combiner
// runner (engine.CombineRunnersMax).
const batchStripes = CombineRunnersMax

// rows is how many counter rows a key of the strategy keeps (refill.sql
// shapes them, $6 and $7).
func (r *strategyRow) rows(cfg holdfast.Config) int {
	switch {
	case r.slotted:
		return cfg.Slots
	case r.striped:
		return batchStripes
	}
	return 1
}

// strategyNames lists the table's strategies for an error: "counter,
// batch, pool or slots".
func strategyNames() string {
	names := make([]string, len(strategyTable))
	for i, row := range strategyTable {
		names[i] = string(row.name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Strategies returns the allocation strategies this engine offers, in its
// table's order (every one of the shared vocabulary). The slice is the
// caller's.
func Strategies() []holdfast.Strategy {
	out := make([]holdfast.Strategy, len(strategyTable))
	for i, row := range strategyTable {
		out[i] = row.name
	}
	return out
}
