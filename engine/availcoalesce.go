package engine

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// AvailabilityReadsInFlightMax bounds the reads of one coalescing group
// (a shop and its locations) in flight at once. One: two were measured
// (docs/PERFORMANCE.md) and served no more reads per second on either
// database, at 8 or 32 readers, for more server CPU per read (smaller
// batches, more statements, on CPU-bound cores).
const AvailabilityReadsInFlightMax = 1

// AvailabilityCoalesceMax bounds the availability queries one coalesced
// read answers: a query arriving when the next read already has that many
// reads on its own.
const AvailabilityCoalesceMax = 64

// availCoalescer turns concurrent availability queries of one shop over
// the same locations (named, or the shop's default order) into one read
// (driver.Driver.ReadAvailability) over the union of their items: a query
// that arrives while AvailabilityReadsInFlightMax reads of its group are
// in flight joins the group's next read, which starts as soon as one in
// flight ends. It never joins a read in flight, whose snapshot may predate the query: every
// answer comes from a snapshot taken after its query arrived, exactly as
// an uncoalesced read's, so coalescing changes how many statements run,
// never what a caller may be told. A query that finds its group idle
// reads at once, alone, with no added wait, as does one that finds fewer
// than AvailabilityReadsInFlightMax reads of its group in flight and none
// waiting.
//
// Bounds: at most AvailabilityReadsInFlightMax reads in flight per group; a next read takes at most
// AvailabilityCoalesceMax queries and holfast.AvailabilityItemsMax items
// (the driver's bound for one statement); a query that does not fit reads
// alone.
type availCoalescer struct {
	mu     sync.Mutex
	groups map[string]*availGroup

	queries    atomic.Int64 // queries answered by a read (coalesced or not)
	statements atomic.Int64 // reads run
}

// availGroup is one group's state while a read of it is in flight.
type availGroup struct {
	inflight int // reads in flight, at most AvailabilityReadsInFlightMax
	shop     int64
	locs     []int64
	next     []*availReq // queries waiting for the next read
	items    []int64     // the union of next's items, in arrival order
}

type availReq struct {
	ctx  context.Context
	q    holdfast.AvailabilityQuery
	done chan availResult // buffered: the reader never blocks on a caller
	gone atomic.Bool      // the caller left before its read started
}

type availResult struct {
	a   *holdfast.Availability
	err error
}

// groupKey is the coalescing group of q: its shop and locations as named
// (none: the shop's default order).
func availGroupKey(q holdfast.AvailabilityQuery) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(q.ShopID, 10))
	b.WriteByte('/')
	for _, l := range q.Locations {
		b.WriteString(strconv.FormatInt(l, 10))
		b.WriteByte(',')
	}
	return b.String()
}

// AvailabilityReads reports how many availability queries this client
// answered from the database and how many reads (statements) it ran for
// them: fewer reads than queries is coalescing at work. Safe for
// concurrent use.
func (c *Client[TTx]) AvailabilityReads() (queries, reads int64) {
	return c.avail.queries.Load(), c.avail.statements.Load()
}

// readAvailability answers q (validated) through the coalescer.
func (c *Client[TTx]) readAvailability(ctx context.Context, q holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	co := &c.avail
	key := availGroupKey(q)
	co.mu.Lock()
	g := co.groups[key]
	if g == nil {
		// Idle: keep the group while reads are in flight so that queries
		// arriving meanwhile can join the next one.
		if co.groups == nil {
			co.groups = map[string]*availGroup{}
		}
		g = &availGroup{shop: q.ShopID, locs: q.Locations}
		co.groups[key] = g
	}
	if g.inflight < AvailabilityReadsInFlightMax && len(g.next) == 0 {
		// Room for another read and nobody waiting: read now, alone.
		g.inflight++
		co.mu.Unlock()
		a, err := c.readOne(ctx, q)
		c.nextAvailRead(key, g)
		return a, err
	}
	items := g.items
	for _, it := range q.Items {
		if !slices.Contains(g.items, it) {
			items = append(items, it)
		}
	}
	if len(g.next) >= AvailabilityCoalesceMax || len(items) > holdfast.AvailabilityItemsMax {
		co.mu.Unlock()
		return c.readOne(ctx, q)
	}
	r := &availReq{ctx: ctx, q: q, done: make(chan availResult, 1)}
	g.items = items
	g.next = append(g.next, r)
	co.mu.Unlock()
	select {
	case res := <-r.done:
		return res.a, res.err
	case <-ctx.Done():
		r.gone.Store(true)
		// A read never changes anything: leaving is always safe.
		return nil, ctx.Err()
	}
}

// readOne is one read answering q alone.
func (c *Client[TTx]) readOne(ctx context.Context, q holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	rows, err := c.readRows(ctx, q.ShopID, q.Items, q.Locations)
	c.avail.queries.Add(1)
	if err != nil {
		return nil, err
	}
	return availableOrOrder(q, rows)
}

// readRows is one read under the engine's retry policy.
func (c *Client[TTx]) readRows(ctx context.Context, shop int64, items, locs []int64) ([]driver.KeyAvailability, error) {
	if locs == nil {
		locs = []int64{}
	}
	c.avail.statements.Add(1)
	var rows []driver.KeyAvailability
	err := c.core.Run(ctx, holdfast.RouteRead, true, true, nil, func(int) error {
		var err error
		rows, err = c.d.ReadAvailability(ctx, shop, items, locs)
		return err
	})
	return rows, err
}

// nextAvailRead ends one of g's reads in flight: when queries joined
// meanwhile, it starts their read (in its own goroutine, so that the
// caller that ran the last one is answered now), else, the last read
// ended, it retires the group.
func (c *Client[TTx]) nextAvailRead(key string, g *availGroup) {
	co := &c.avail
	co.mu.Lock()
	reqs, items := g.next, g.items
	if len(reqs) == 0 {
		if g.inflight--; g.inflight == 0 {
			delete(co.groups, key)
		}
		co.mu.Unlock()
		return
	}
	g.next, g.items = nil, nil // the read in flight passes its place on
	co.mu.Unlock()
	go func() {
		c.runAvailRead(g, reqs, items)
		c.nextAvailRead(key, g)
	}()
}

// runAvailRead runs one read over items for reqs and answers each
// request with its own items, in its own order. The read runs under the
// first live request's context values without its cancellation: the
// others still wait for it. When every request has left, it reads
// nothing.
func (c *Client[TTx]) runAvailRead(g *availGroup, reqs []*availReq, items []int64) {
	var ctx context.Context
	for _, r := range reqs {
		if !r.gone.Load() {
			ctx = r.ctx
			break
		}
	}
	if ctx == nil {
		return
	}
	// Bounded as its attempts are: a statement timeout each, and the
	// backoff between them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.StatementTimeout*time.Duration(max(0, c.cfg.RetryMax)+2))
	defer cancel()
	rows, err := c.readRows(ctx, g.shop, items, g.locs)
	c.avail.queries.Add(int64(len(reqs)))
	for _, r := range reqs {
		if err != nil {
			r.done <- availResult{err: err}
			continue
		}
		a, err := availableOrOrder(r.q, pick(rows, items, r.q.Items))
		r.done <- availResult{a: a, err: err}
	}
}

// pick is the rows of want's items, in want's order, from rows read for
// items (want ⊆ items) — each item's run of one row per location. Rows
// that do not divide into items (a driver's bug) are passed on whole for
// Available to refuse.
func pick(rows []driver.KeyAvailability, items, want []int64) []driver.KeyAvailability {
	if len(rows)%len(items) != 0 {
		return rows
	}
	n := len(rows) / len(items)
	if slices.Equal(items, want) {
		return rows
	}
	out := make([]driver.KeyAvailability, 0, n*len(want))
	for _, it := range want {
		i := slices.Index(items, it)
		out = append(out, rows[i*n:(i+1)*n]...)
	}
	return out
}

// availableOrOrder is Available, except that no rows (a shop without a
// default order, queried without locations) is the *ArgumentError that
// says so.
func availableOrOrder(q holdfast.AvailabilityQuery, rows []driver.KeyAvailability) (*holdfast.Availability, error) {
	if len(rows) == 0 {
		return nil, holdfast.NewArgumentError("locations", "the shop has no default location order: name the locations, or set an order")
	}
	return Available(q, rows)
}
