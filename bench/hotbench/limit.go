package hotbench

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
)

// The durable limit: the least a batch of holds can write and still be
// durable — one transaction that takes LimitBatch units from one counter
// row and inserts LimitBatch narrow rows keyed (shop, checkout ID), one
// index entry each — run by LimitConns connections, as many as an
// engine's combiner runs batches at once (CombineRunnersMax), so that
// LimitConns × LimitBatch = 64 holds are in flight, as with 64 clients.
// On one counter row, and with the count striped over LimitStripes rows.
// It is the physical limit a hold is measured against: what the server
// can commit, durably, per second, when a hold is nothing but its row and
// its share of a count.
const (
	LimitBatch   = 32
	LimitConns   = 2
	LimitStripes = 8
)

// ScenarioLimit is the durable limit's scenario name in a Report.
const ScenarioLimit = "limit"

// LimitStripeCounts are the striped counts the limit runs with.
func LimitStripeCounts() []int { return []int{1, LimitStripes} }

// LimitHold is one durable-limit transaction: take len(ids) units from
// counter row stripe and insert one row per ID, committed together.
type LimitHold func(ctx context.Context, stripe int, ids []uuid.UUID) error

// MeasureLimit measures the durable limit on t, on one counter row and
// on LimitStripes rows, each for o.Duration after o.Warmup, with its cost
// when t is a Meter. HoldsPerSec counts rows inserted (LimitBatch per
// transaction); Clients is the holds in flight (LimitConns × LimitBatch);
// latencies are per transaction.
func MeasureLimit(ctx context.Context, t Target, o Options) ([]*Result, error) {
	o = o.withDefaults(t)
	r := &runner{o: o, t: t}
	var out []*Result
	for _, stripes := range LimitStripeCounts() {
		res, err := r.limit(ctx, stripes)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// LimitStrategy names a limit run with stripes counter rows ("1 row",
// "8 rows").
func LimitStrategy(stripes int) string {
	if stripes == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", stripes)
}

func (r *runner) limit(ctx context.Context, stripes int) (*Result, error) {
	db, err := r.t.Database(ctx, LimitConns+ceilingSlack)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	hold, err := db.Limit(ctx, stripes)
	if err != nil {
		return nil, fmt.Errorf("hotbench: durable limit: %w", err)
	}
	var next atomic.Uint64
	do := func(ctx context.Context) error {
		ids := make([]uuid.UUID, LimitBatch)
		for i := range ids {
			ids[i] = uuid.New()
		}
		return hold(ctx, int(next.Add(1)%uint64(stripes)), ids)
	}
	res := &Result{Scenario: ScenarioLimit, Strategy: LimitStrategy(stripes), Clients: LimitConns * LimitBatch}
	m := r.timed(ctx, fmt.Sprintf("limit      %-8s c=%-3d", LimitStrategy(stripes), LimitConns), LimitConns, LimitBatch, do)
	m.fill(res, r.o.Duration)
	res.Holds *= LimitBatch
	res.HoldsPerSec *= LimitBatch
	if res.Errors > 0 {
		return nil, fmt.Errorf("hotbench: durable limit: %d errors %v", res.Errors, res.ErrorKinds)
	}
	return res, nil
}
