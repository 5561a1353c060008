// Package acklog keeps what a shop's buyers were told (every acknowledged
// reservation, claim and release, and the operations whose outcome is
// unknown) and compares it, afterwards, with what a database holds: an
// acknowledged operation missing or different is lost; a claim that
// deducted stock twice, or a hold no buyer was told of, was applied twice.
// The demo of a shop moved mid-sale (`holdfast demo --scenario pods`)
// checks the target pod with it, as pods' TestMoveUnderLoad does.
package acklog

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// ProblemsMax bounds the problems a Result lists (they are all counted).
const ProblemsMax = 20

// Log is what each checkout was last told. Safe for concurrent use; the
// zero value is empty and ready.
type Log struct {
	mu sync.Mutex
	m  map[uuid.UUID]outcome
}

type outcome struct {
	status  holdfast.Status
	unknown bool
}

// Ack records that checkout was told status: StatusHeld (reserved),
// StatusClaimed, StatusReleased, or StatusExpired for a hold its buyer
// abandoned (held until a sweeper expires it; either is correct).
func (l *Log) Ack(checkout uuid.UUID, status holdfast.Status) {
	l.set(checkout, outcome{status: status})
}

// Unknown records that an operation of checkout got no definite answer: it
// may have been applied or not, so the checkout is not judged.
func (l *Log) Unknown(checkout uuid.UUID) { l.set(checkout, outcome{unknown: true}) }

func (l *Log) set(id uuid.UUID, o outcome) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[uuid.UUID]outcome{}
	}
	l.m[id] = o
	l.mu.Unlock()
}

// Len is how many checkouts the log holds.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// Result is a comparison of a Log with a database.
type Result struct {
	// Acked are the checkouts with a definite answer; Unknown those
	// without one (not judged).
	Acked, Unknown int
	// Lost: acknowledged operations that the database does not hold as
	// acknowledged (the hold missing, or in another state).
	Lost int
	// Twice: operations applied more than once, or applied without an
	// answer that says so: claim ledger entries beyond one per claimed
	// hold, claims of checkouts told otherwise, holds of the shop no
	// buyer was told of.
	Twice int
	// Claimed is the units the database's claim ledger deducted for the
	// key; Available the key's available stock now.
	Claimed, Available int
	// Holds counts the shop's holds in the database by status.
	Holds map[holdfast.Status]int
	// Problems describe the first ProblemsMax lost or doubled operations.
	Problems []string
}

func (r *Result) problem(format string, args ...any) {
	if len(r.Problems) < ProblemsMax {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Check compares l with eng (the engine of the database that should hold
// the shop, read directly, not through a router), for the holds of the
// shop of key and the claims on key, whose stock was set to stock once
// before the sale (every unit of the sale's holds is one of key). Each
// acknowledged checkout is read back (Hold); the key's claim ledger is
// read in full; the shop's holds are listed in full.
func Check(ctx context.Context, eng holdfast.Engine, key holdfast.Key, stock int, l *Log) (*Result, error) {
	l.mu.Lock()
	m := make(map[uuid.UUID]outcome, len(l.m))
	for id, o := range l.m {
		m[id] = o
	}
	l.mu.Unlock()
	r := &Result{Holds: map[holdfast.Status]int{}}
	for id, o := range m {
		if o.unknown {
			r.Unknown++
			continue
		}
		r.Acked++
		h, err := eng.Hold(ctx, key.ShopID, id)
		switch {
		case errors.Is(err, holdfast.ErrNotFound):
			r.Lost++
			r.problem("lost: checkout %s was told %s and is not in the database", id, o.status)
			continue
		case err != nil:
			return nil, fmt.Errorf("acklog: reading checkout %s: %w", id, err)
		}
		ok := h.Status == o.status
		if o.status == holdfast.StatusExpired || o.status == holdfast.StatusHeld {
			// Held until a sweeper expires it.
			ok = h.Status == holdfast.StatusHeld || h.Status == holdfast.StatusExpired
		}
		if !ok {
			r.Lost++
			r.problem("lost: checkout %s was told %s and is %s in the database", id, o.status, h.Status)
		}
	}

	// The claim ledger: one entry per claimed hold, none for a checkout
	// told anything but claimed (or unknown).
	claims := map[string]int{}
	q := holdfast.LedgerQuery{Key: key, Limit: holdfast.ListLimitMax}
	for {
		p, err := eng.Ledger(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("acklog: reading the ledger: %w", err)
		}
		for _, e := range p.Entries {
			if e.Reason != "claim" {
				continue
			}
			claims[e.Reference]++
			r.Claimed -= e.Delta
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	for ref, n := range claims {
		if n > 1 {
			r.Twice += n - 1
			r.problem("applied twice: checkout %s has %d claim ledger entries", ref, n)
		}
		id, err := uuid.Parse(ref)
		if err != nil {
			r.Twice++
			r.problem("applied twice: a claim ledger entry of no checkout (%q)", ref)
			continue
		}
		if o, ok := m[id]; !ok || (!o.unknown && o.status != holdfast.StatusClaimed) {
			r.Twice++
			r.problem("applied twice: checkout %s was claimed, and told %s", id, o.status)
		}
	}

	// The shop's holds: none that no buyer was told of.
	hq := holdfast.HoldQuery{ShopID: key.ShopID, Limit: holdfast.ListLimitMax}
	for {
		p, err := eng.Holds(ctx, hq)
		if err != nil {
			return nil, fmt.Errorf("acklog: listing the holds: %w", err)
		}
		for _, h := range p.Holds {
			r.Holds[h.Status]++
			if _, ok := m[h.CheckoutID]; !ok {
				r.Twice++
				r.problem("applied twice: hold %s (%s) no buyer was told of", h.CheckoutID, h.Status)
			}
		}
		if p.Next == "" {
			break
		}
		hq.After = p.Next
	}

	lvl, err := eng.Level(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("acklog: reading the level: %w", err)
	}
	r.Available = lvl.Available
	if lvl.Available != stock-r.Claimed {
		// The level and the ledger disagree: a deduction without its entry
		// (or the reverse).
		r.Twice++
		r.problem("applied twice: available %d, not %d - %d claimed", lvl.Available, stock, r.Claimed)
	}
	return r, nil
}
