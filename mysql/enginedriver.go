package mysql

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// engineDriver is this package as the engine's driver
// (engine/driver.Driver[*sql.Tx]): the Client's own attempts and
// classifier, seen through the contract. It is the Client itself, under a
// type whose methods are the contract's, so the Client's exported methods
// stay the user's.
type engineDriver Client

var (
	_ hfdriver.Driver[*sql.Tx] = (*engineDriver)(nil)
	_ hfdriver.EventPurger     = (*engineDriver)(nil)
	_ hfdriver.PoolTopUpper    = (*engineDriver)(nil)
)

func (d *engineDriver) c() *Client { return (*Client)(d) }

func (d *engineDriver) TopUpPools(ctx context.Context, keys []holdfast.Key) error {
	return d.c().topUpPools(ctx, keys)
}

func (d *engineDriver) Code(err error) string         { return classifier{}.Code(err) }
func (d *engineDriver) Retryable(err error) bool      { return classifier{}.Retryable(err) }
func (d *engineDriver) ConnectionLost(err error) bool { return classifier{}.ConnectionLost(err) }
func (d *engineDriver) CommitUnacknowledged(err error) bool {
	return classifier{}.CommitUnacknowledged(err)
}
func (d *engineDriver) Unavailable(err error) bool  { return classifier{}.Unavailable(err) }
func (d *engineDriver) CallerTxLost(err error) bool { return classifier{}.CallerTxLost(err) }

// Attempt runs fn in the client's own READ COMMITTED transaction (own) or
// in a savepoint of the caller's tx (client.go, once).
func (d *engineDriver) Attempt(ctx context.Context, tx *sql.Tx, own bool, route string, fn func(tx *sql.Tx) error) error {
	if own {
		tx = nil
	}
	return d.c().once(ctx, tx, route, fn)
}

func (d *engineDriver) ClaimAttempt(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return d.c().claimOnce(ctx, tx, own, shop, checkout)
}

func (d *engineDriver) ReleaseAttempt(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return d.c().releaseOnce(ctx, tx, own, shop, checkout)
}

func (d *engineDriver) ExtendAttempt(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	return d.c().extendOnce(ctx, tx, shop, checkout, ttl)
}

func (d *engineDriver) ReadHold(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return d.c().readHold(ctx, tx, route, "hold_get", shop, checkout)
}

func (d *engineDriver) CancelWait(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID) (bool, error) {
	return d.c().cancelWait(ctx, tx, route, shop, checkout)
}

func (d *engineDriver) WaiterAnswer(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID) error {
	return d.c().waiterAnswer(ctx, tx, route, shop, checkout, nil)
}

func (d *engineDriver) ExpireWait(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID) error {
	return d.c().expireWait(ctx, tx, shop, checkout)
}

func (d *engineDriver) ReserveAttempt(ctx context.Context, tx *sql.Tx, own bool, r *hfdriver.Reservation, mode hfdriver.TakeMode) (*holdfast.Hold, error) {
	return d.c().reserveOnce(ctx, tx, own, r, mode)
}

func (d *engineDriver) SoldOut(ctx context.Context, r *hfdriver.Reservation) ([]holdfast.Shortfall, error) {
	return d.c().soldOut(ctx, r)
}

func (d *engineDriver) RefillInline(ctx context.Context, shop int64, lines []holdfast.Line) error {
	return d.c().refillInline(ctx, shop, lines)
}

func (d *engineDriver) BuyerSecretAttempt(ctx context.Context, tx *sql.Tx, fresh []byte) ([]byte, error) {
	return d.c().buyerSecretAttempt(ctx, tx, fresh)
}

func (d *engineDriver) Combines(k holdfast.Key) bool { return d.c().batchKey(k) }

// CombinedAttempt: a batch key has one counter row here, so the stripe
// does not matter and no other row may grant what a batch did not.
func (d *engineDriver) CombinedAttempt(ctx context.Context, reqs []*hfdriver.Reservation, _ int) ([]*holdfast.Hold, []bool, error) {
	holds, err := d.c().combinedAttempt(ctx, reqs)
	return holds, nil, err
}

// CombineLockBusy: a combined batch here waits as any transaction does.
func (d *engineDriver) CombineLockBusy(error) bool { return false }

// CombineOverlap: a batch key has one counter row here. A deep key's
// batches run optimistic, taking its units last (combine.go), so two of
// them overlap but for their takes and COMMITs; a shallow key's lock it
// first, one at a time. (A batch that also serves a shallow key runs
// locked: a deep key's second batch then waits for it, which costs time,
// never correctness.)
func (d *engineDriver) CombineOverlap(k holdfast.Key) int {
	if d.c().depth.Deep(k) {
		return 2
	}
	return 1
}

// HoldFirst: a reservation's in-flight mark comes first here, its hold
// last.
func (d *engineDriver) HoldFirst() bool { return false }

func (d *engineDriver) AllocateBegin(ctx context.Context, tx *sql.Tx, r *hfdriver.Reservation, order bool) ([]int64, error) {
	return d.c().allocateBegin(ctx, tx, r, order)
}

func (d *engineDriver) AllocateRead(ctx context.Context, tx *sql.Tx, own bool, r *hfdriver.Reservation, keys []holdfast.Line, mode hfdriver.TakeMode) (*hfdriver.AllocRead, error) {
	return d.c().allocateRead(ctx, tx, own, r, keys, mode)
}

func (d *engineDriver) AllocateTake(ctx context.Context, tx *sql.Tx, own bool, r *hfdriver.Reservation, read *hfdriver.AllocRead, resolved []holdfast.Line) (*holdfast.Hold, []holdfast.Shortfall, error) {
	return d.c().allocateTake(ctx, tx, own, r, read, resolved)
}

func (d *engineDriver) BuyerOf(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID) ([]byte, error) {
	hash, err := d.c().buyerOf(ctx, tx, route, shop, checkout)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, holdfast.ErrNotFound
	}
	return hash, err
}

// Reserved: nothing to track (the replenisher here scans levels).

func (d *engineDriver) MarkNotStocked(ctx context.Context, tx *sql.Tx, own bool, shop int64, err error) error {
	if own {
		return d.c().markNotStocked(ctx, d.db, shop, err)
	}
	return d.c().markNotStocked(ctx, tx, shop, err)
}

func (d *engineDriver) ReserveExisting(ctx context.Context, tx *sql.Tx, r *hfdriver.Reservation) (*holdfast.Hold, error) {
	return d.c().existing(ctx, tx, r)
}

func (d *engineDriver) WaitKeys(ctx context.Context, tx *sql.Tx, r *hfdriver.Reservation) ([]hfdriver.KeyWait, error) {
	return d.c().waitKeys(ctx, tx, r)
}

func (d *engineDriver) Enqueue(ctx context.Context, tx *sql.Tx, r *hfdriver.Reservation, short []holdfast.Line, shortfalls []holdfast.Shortfall, wait time.Duration) error {
	return d.c().enqueue(ctx, tx, r, short, shortfalls, wait)
}

func (d *engineDriver) ListHolds(ctx context.Context, tx *sql.Tx, q holdfast.HoldQuery, cur *holdfast.HoldCursor) ([]holdfast.Hold, error) {
	return d.c().listHolds(ctx, tx, q, cur)
}

func (d *engineDriver) ListLedger(ctx context.Context, tx *sql.Tx, q holdfast.LedgerQuery, cur *holdfast.LedgerCursor) ([]holdfast.LedgerEntry, error) {
	return d.c().listLedger(ctx, tx, q, cur)
}

func (d *engineDriver) ListKeys(ctx context.Context, tx *sql.Tx, q holdfast.KeyQuery) ([]holdfast.Key, error) {
	return d.c().listKeys(ctx, tx, q)
}

func (d *engineDriver) SequencePasses(ctx context.Context, reading bool) (int, error) {
	return d.c().sequencePasses(ctx, reading)
}

func (d *engineDriver) ReadEvents(ctx context.Context, tx *sql.Tx, shop, after int64, limit int) ([]holdfast.Event, int64, error) {
	return d.c().readEvents(ctx, tx, shop, after, limit)
}

func (d *engineDriver) PutBuyerLimit(ctx context.Context, tx *sql.Tx, l holdfast.BuyerLimit) error {
	return d.c().putBuyerLimit(ctx, tx, l)
}

func (d *engineDriver) GetBuyerLimit(ctx context.Context, tx *sql.Tx, shop, item int64) (*holdfast.BuyerLimit, error) {
	return d.c().getBuyerLimit(ctx, tx, shop, item)
}

func (d *engineDriver) DeleteBuyerLimit(ctx context.Context, tx *sql.Tx, shop, item int64) error {
	return d.c().deleteBuyerLimit(ctx, tx, shop, item)
}

func (d *engineDriver) PutLocationOrder(ctx context.Context, tx *sql.Tx, shop int64, locations []int64) error {
	return d.c().putLocationOrder(ctx, tx, shop, locations)
}

func (d *engineDriver) GetLocationOrder(ctx context.Context, tx *sql.Tx, shop int64) ([]int64, error) {
	return d.c().locationOrder(ctx, tx, holdfast.RouteLocationOrder, shop)
}

func (d *engineDriver) Strategies() []holdfast.Strategy { return Strategies() }

func (d *engineDriver) ChangeStockAttempt(ctx context.Context, tx *sql.Tx, own bool, ch holdfast.StockChange) (*holdfast.Level, error) {
	return d.c().changeStockOnce(ctx, tx, own, ch)
}

func (d *engineDriver) SetStrategyAttempt(ctx context.Context, tx *sql.Tx, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	return d.c().setStrategyOnce(ctx, tx, k, s, poolCap)
}

func (d *engineDriver) StrategyChanged(k holdfast.Key) { d.keys.Delete(k) }

func (d *engineDriver) SetSafetyAttempt(ctx context.Context, tx *sql.Tx, k holdfast.Key, safety int) (*holdfast.Level, error) {
	return d.c().setSafetyOnce(ctx, tx, k, safety)
}

func (d *engineDriver) ReadLevel(ctx context.Context, tx *sql.Tx, route string, k holdfast.Key) (*holdfast.Level, error) {
	return d.c().level(ctx, tx, route, k)
}

func (d *engineDriver) EditAttempt(ctx context.Context, tx *sql.Tx, own bool, p holdfast.EditParams, lines []holdfast.Line, raw []byte, mode hfdriver.TakeMode) (*holdfast.Hold, []holdfast.Line, error) {
	return d.c().editOnce(ctx, tx, own, p, lines, raw, mode)
}

// Edited: nothing to track (the replenisher here scans levels).

func (d *engineDriver) ClaimLinesAttempt(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID, in, want []holdfast.Line) (*holdfast.Hold, error) {
	return d.c().claimLinesOnce(ctx, tx, own, shop, checkout, in, want)
}

func (d *engineDriver) ReadInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	return d.c().checkInvariant(ctx)
}

func (d *engineDriver) MaintenanceAttempt(ctx context.Context, route string, fn func(tx *sql.Tx) error) error {
	return d.c().once(ctx, nil, route, fn)
}

func (d *engineDriver) SweepAttempt(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	return d.c().sweepAttempt(ctx, tx, limit)
}

func (d *engineDriver) PurgeAttempt(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	return d.c().purgeAttempt(ctx, tx, limit)
}

func (d *engineDriver) ReplenishAttempt(ctx context.Context, tx *sql.Tx, after holdfast.Key, limit int) (int, holdfast.Key, int, error) {
	return d.c().replenishAttempt(ctx, tx, after, limit)
}

func (d *engineDriver) AnyWaiting(ctx context.Context) (bool, error) { return d.c().anyWaiting(ctx) }

func (d *engineDriver) WaitServeLock(ctx context.Context, tx *sql.Tx) error {
	_, err := d.c().exists(ctx, tx, holdfast.RouteReplenish, "waitlist_serve_lock")
	return err
}

func (d *engineDriver) ExpireWaits(ctx context.Context, tx *sql.Tx) (int, error) {
	return d.c().expireWaits(ctx, tx)
}

func (d *engineDriver) WaitWindow(ctx context.Context, tx *sql.Tx, from holdfast.Key, limit int) ([]holdfast.Key, error) {
	return d.c().waitWindow(ctx, tx, from, limit)
}

func (d *engineDriver) WaitHeads(ctx context.Context, tx *sql.Tx, keys []holdfast.Key) ([]hfdriver.Waiter, error) {
	return d.c().waitHeads(ctx, tx, keys)
}

// LockWaitKey: the key's lock row (false: the key has none).
func (d *engineDriver) LockWaitKey(ctx context.Context, tx *sql.Tx, k holdfast.Key) (bool, error) {
	return d.c().lockKey(ctx, tx, holdfast.RouteReplenish, k)
}

func (d *engineDriver) EndUnservableWaits(ctx context.Context, tx *sql.Tx, keys []holdfast.Key, _ map[holdfast.Key]bool) (int, error) {
	return d.c().endUnservable(ctx, tx, keys)
}

// GrantWait: the hold is not read back here.
func (d *engineDriver) GrantWait(ctx context.Context, tx *sql.Tx, w hfdriver.Waiter) (*holdfast.Hold, bool, error) {
	done, err := d.c().grantWait(ctx, tx, w)
	return nil, done, err
}

func (d *engineDriver) RefillWaitKeys(ctx context.Context, tx *sql.Tx, keys []holdfast.Key, locked map[holdfast.Key]bool) error {
	return d.c().refillWaitKeys(ctx, tx, keys, locked)
}

// WaitsGranted: nothing to track (the sweeper here scans on its tick).

// CombinedClaimAttempt: hfdriver.ClaimCombiner (claimcombine.go).
func (d *engineDriver) CombinedClaimAttempt(ctx context.Context, claims []hfdriver.ClaimRequest) ([]*holdfast.Hold, error) {
	return d.c().combinedClaimAttempt(ctx, claims)
}
