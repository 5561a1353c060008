package driver

import (
	"context"
	"errors"

	"github.com/holdfast/holdfast"
)

// Allocator is the database side of a reservation with allocated lines
// (LocationID 0): the engine (engine/allocate.go) expands the lines'
// candidates, chooses the locations from what the driver read, and
// decides what a shortfall, an existing hold or an over-limit answer
// means; the driver locks, reads and writes, in its lock order.
//
// One allocation attempt is the three calls below in one transaction
// (Attempt), in this order, with the engine's choice between the read and
// the take. The seam sits inside the attempt because the choice must be
// made on what the attempt itself read under its locks; each call is a
// whole phase of the attempt in the driver's lock order, never a single
// statement the engine orders.
type Allocator[TTx comparable] interface {
	// HoldFirst reports whether the driver's reserve attempts place the
	// checkout's hold row first (PostgreSQL: the row is the checkout's
	// lock), so that AllocateRead finds a hold or outcome the checkout
	// already has (ErrHoldExists) before anything is counted. Otherwise
	// (MySQL: the checkout's in-flight mark first, the hold last) the
	// engine looks for one before it answers a shortfall or an over-limit.
	HoldFirst() bool
	// AllocateBegin starts an allocation attempt of r in tx with what the
	// driver's lock order puts before anything else (MySQL: the
	// checkout's in-flight mark), and reads the shop's default location
	// order when order is set (empty, not nil, when none is set).
	AllocateBegin(ctx context.Context, tx TTx, r *Reservation, order bool) ([]int64, error)
	// AllocateRead reads the sellable units of keys (every candidate key
	// and fixed key, quantities zero, in key order) by mode: on the slower
	// modes after locking them (TakeLocked: each key's lock, a refill of
	// each, then their buffers), on the fast path without locks (a read
	// that can only over-count). A named buyer's limits are checked here,
	// in the driver's lock order (a *holdfast.BuyerLimitError). A
	// HoldFirst driver places the hold row first and answers
	// ErrHoldExists when the checkout already has a hold or outcome.
	AllocateRead(ctx context.Context, tx TTx, own bool, r *Reservation, keys []holdfast.Line, mode TakeMode) (*AllocRead, error)
	// AllocateTake takes the resolved lines (one per chosen location, in
	// key order) by read.Mode and creates the hold with them: the hold, or
	// the lines that came up short (nothing kept: the engine rolls back),
	// or ErrSlowPath (a fast take short of a refill), or ErrHoldExists (a
	// driver that creates the hold last found one in place).
	AllocateTake(ctx context.Context, tx TTx, own bool, r *Reservation, read *AllocRead, resolved []holdfast.Line) (*holdfast.Hold, []holdfast.Shortfall, error)
}

// AllocRead is what AllocateRead read of an allocation's keys.
type AllocRead struct {
	// Sellable is each key's sellable units, in the order of the keys
	// read (0 for a key whose units go to its waiters first).
	Sellable []int
	// Mode is the take mode the attempt runs by from here: the one asked,
	// or a slower one the driver's lock order needs (PostgreSQL takes a
	// named buyer's locks only on TakeLocked).
	Mode TakeMode
	// Hold is the hold as a HoldFirst driver placed it, its lines to come;
	// nil otherwise.
	Hold *holdfast.Hold
}

// ErrHoldExists is an allocation phase's answer when the checkout already
// has a hold or outcome (or a wait): the engine answers the request from
// it — a replay, a conflict, or the hold's end.
var ErrHoldExists = errors.New("holdfast: the checkout has a hold")
