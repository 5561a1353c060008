package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// engineDriver is this package as the engine's driver
// (engine/driver.Driver[pgx.Tx]): the Client's own attempts and
// classifier, seen through the contract. It is the Client itself, under a
// type whose methods are the contract's, so the Client's exported methods
// stay the user's.
type engineDriver Client

var (
	_ driver.Driver[pgx.Tx]     = (*engineDriver)(nil)
	_ driver.MaintenanceStarter = (*engineDriver)(nil)
	_ driver.ExpiryProber       = (*engineDriver)(nil)
	_ driver.ChangedKeys        = (*engineDriver)(nil)
)

func (d *engineDriver) c() *Client { return (*Client)(d) }

func (d *engineDriver) Code(err error) string         { return classifier{}.Code(err) }
func (d *engineDriver) Retryable(err error) bool      { return classifier{}.Retryable(err) }
func (d *engineDriver) ConnectionLost(err error) bool { return classifier{}.ConnectionLost(err) }
func (d *engineDriver) CommitUnacknowledged(err error) bool {
	return classifier{}.CommitUnacknowledged(err)
}
func (d *engineDriver) Unavailable(err error) bool  { return classifier{}.Unavailable(err) }
func (d *engineDriver) CallerTxLost(err error) bool { return classifier{}.CallerTxLost(err) }

// Attempt runs fn in the client's own transaction (own) or in a savepoint
// of the caller's tx (tx.go).
func (d *engineDriver) Attempt(ctx context.Context, tx pgx.Tx, own bool, route string, fn func(tx pgx.Tx) error) error {
	var b beginner = tx
	if own {
		b = d.pool
	}
	return d.c().once(ctx, b, route, own, fn)
}

func (d *engineDriver) ClaimAttempt(ctx context.Context, tx pgx.Tx, _ bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return d.c().claimOnce(ctx, tx, shop, checkout)
}

func (d *engineDriver) ReleaseAttempt(ctx context.Context, tx pgx.Tx, _ bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return d.c().releaseOnce(ctx, tx, shop, checkout)
}

func (d *engineDriver) ExtendAttempt(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	return d.c().extendOnce(ctx, tx, shop, checkout, ttl)
}

func (d *engineDriver) ReadHold(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return d.c().getHold(ctx, tx, route, shop, checkout)
}

func (d *engineDriver) CancelWait(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID) (bool, error) {
	return d.c().cancelWait(ctx, tx, route, shop, checkout)
}

func (d *engineDriver) WaiterAnswer(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID) error {
	return d.c().waiterAnswer(ctx, tx, route, shop, checkout, nil)
}

func (d *engineDriver) ExpireWait(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID) error {
	return d.c().expireWait(ctx, tx, shop, checkout)
}

func (d *engineDriver) ReserveAttempt(ctx context.Context, tx pgx.Tx, _ bool, r *driver.Reservation, mode driver.TakeMode) (*holdfast.Hold, error) {
	return d.c().reserveOnce(ctx, tx, r, mode)
}

func (d *engineDriver) SoldOut(ctx context.Context, r *driver.Reservation) ([]holdfast.Shortfall, error) {
	return d.c().soldOut(ctx, r)
}

func (d *engineDriver) RefillInline(ctx context.Context, shop int64, lines []holdfast.Line) error {
	return d.c().refillInline(ctx, shop, lines)
}

func (d *engineDriver) BuyerSecretAttempt(ctx context.Context, tx pgx.Tx, fresh []byte) ([]byte, error) {
	return d.c().buyerSecretAttempt(ctx, tx, fresh)
}

func (d *engineDriver) Combines(k holdfast.Key) bool { return d.c().batchKey(k) }

func (d *engineDriver) CombinedAttempt(ctx context.Context, reqs []*driver.Reservation, stripe int) ([]*holdfast.Hold, []bool, error) {
	return d.c().combinedAttempt(ctx, reqs, stripe)
}

// CombineLockBusy: the batch's lock_timeout (Config.CombineLockWait) ran out.
func (d *engineDriver) CombineLockBusy(err error) bool {
	return SQLState(err) == sqlstateLockNotAvailable
}

// CombineOverlap: a batch key keeps one counter row per stripe
// (strategies.go, batchStripes): while it is deep (combine.go,
// StripeDepth) its batches take one row each and never wait for each
// other; while shallow, one batch of it at a time holds every row.
func (d *engineDriver) CombineOverlap(k holdfast.Key) int {
	if d.c().depth.Deep(k) {
		return batchStripes
	}
	return 1
}

// HoldFirst: a reservation's hold row is its first lock here.
func (d *engineDriver) HoldFirst() bool { return true }

func (d *engineDriver) AllocateBegin(ctx context.Context, tx pgx.Tx, r *driver.Reservation, order bool) ([]int64, error) {
	return d.c().allocateBegin(ctx, tx, r, order)
}

func (d *engineDriver) AllocateRead(ctx context.Context, tx pgx.Tx, _ bool, r *driver.Reservation, keys []holdfast.Line, mode driver.TakeMode) (*driver.AllocRead, error) {
	return d.c().allocateRead(ctx, tx, r, keys, mode)
}

func (d *engineDriver) AllocateTake(ctx context.Context, tx pgx.Tx, _ bool, r *driver.Reservation, read *driver.AllocRead, resolved []holdfast.Line) (*holdfast.Hold, []holdfast.Shortfall, error) {
	return d.c().allocateTake(ctx, tx, r, read, resolved)
}

func (d *engineDriver) BuyerOf(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID) ([]byte, error) {
	hash, err := d.c().buyerOf(ctx, tx, route, shop, checkout)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, holdfast.ErrNotFound
	}
	return hash, err
}

func (d *engineDriver) MarkNotStocked(ctx context.Context, tx pgx.Tx, own bool, shop int64, err error) error {
	if own {
		return d.c().markNotStocked(ctx, d.pool, shop, err)
	}
	return d.c().markNotStocked(ctx, tx, shop, err)
}

func (d *engineDriver) ReserveExisting(ctx context.Context, tx pgx.Tx, r *driver.Reservation) (*holdfast.Hold, error) {
	return d.c().existing(ctx, tx, r)
}

func (d *engineDriver) WaitKeys(ctx context.Context, tx pgx.Tx, r *driver.Reservation) ([]driver.KeyWait, error) {
	return d.c().waitKeys(ctx, tx, r)
}

func (d *engineDriver) Enqueue(ctx context.Context, tx pgx.Tx, r *driver.Reservation, short []holdfast.Line, shortfalls []holdfast.Shortfall, wait time.Duration) error {
	return d.c().enqueue(ctx, tx, r, short, shortfalls, wait)
}

func (d *engineDriver) ListHolds(ctx context.Context, tx pgx.Tx, q holdfast.HoldQuery, cur *holdfast.HoldCursor) ([]holdfast.Hold, error) {
	return d.c().listHolds(ctx, tx, q, cur)
}

func (d *engineDriver) ListLedger(ctx context.Context, tx pgx.Tx, q holdfast.LedgerQuery, cur *holdfast.LedgerCursor) ([]holdfast.LedgerEntry, error) {
	return d.c().listLedger(ctx, tx, q, cur)
}

func (d *engineDriver) ListKeys(ctx context.Context, tx pgx.Tx, q holdfast.KeyQuery) ([]holdfast.Key, error) {
	return d.c().listKeys(ctx, tx, q)
}

func (d *engineDriver) SequencePasses(ctx context.Context, reading bool) (int, error) {
	return d.c().sequencePasses(ctx, reading)
}

func (d *engineDriver) ReadEvents(ctx context.Context, tx pgx.Tx, shop, after int64, limit int) ([]holdfast.Event, int64, error) {
	return d.c().readEvents(ctx, tx, shop, after, limit)
}

func (d *engineDriver) PutBuyerLimit(ctx context.Context, tx pgx.Tx, l holdfast.BuyerLimit) error {
	return d.c().putBuyerLimit(ctx, tx, l)
}

func (d *engineDriver) GetBuyerLimit(ctx context.Context, tx pgx.Tx, shop, item int64) (*holdfast.BuyerLimit, error) {
	return d.c().getBuyerLimit(ctx, tx, shop, item)
}

func (d *engineDriver) DeleteBuyerLimit(ctx context.Context, tx pgx.Tx, shop, item int64) error {
	return d.c().deleteBuyerLimit(ctx, tx, shop, item)
}

func (d *engineDriver) PutLocationOrder(ctx context.Context, tx pgx.Tx, shop int64, locations []int64) error {
	return d.c().putLocationOrder(ctx, tx, shop, locations)
}

func (d *engineDriver) GetLocationOrder(ctx context.Context, tx pgx.Tx, shop int64) ([]int64, error) {
	return d.c().locationOrder(ctx, tx, holdfast.RouteLocationOrder, shop)
}

func (d *engineDriver) Strategies() []holdfast.Strategy { return Strategies() }

func (d *engineDriver) ChangeStockAttempt(ctx context.Context, tx pgx.Tx, own bool, ch holdfast.StockChange) (*holdfast.Level, error) {
	return d.c().changeStockOnce(ctx, tx, ch)
}

func (d *engineDriver) SetStrategyAttempt(ctx context.Context, tx pgx.Tx, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	return d.c().setStrategyOnce(ctx, tx, k, s, poolCap)
}

func (d *engineDriver) StrategyChanged(k holdfast.Key) { d.keys.Delete(k) }

func (d *engineDriver) SetSafetyAttempt(ctx context.Context, tx pgx.Tx, k holdfast.Key, safety int) (*holdfast.Level, error) {
	return d.c().setSafetyOnce(ctx, tx, k, safety)
}

func (d *engineDriver) ReadLevel(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key) (*holdfast.Level, error) {
	return d.c().level(ctx, tx, route, k)
}

func (d *engineDriver) EditAttempt(ctx context.Context, tx pgx.Tx, _ bool, p holdfast.EditParams, lines []holdfast.Line, raw []byte, mode driver.TakeMode) (*holdfast.Hold, []holdfast.Line, error) {
	return d.c().editOnce(ctx, tx, p, lines, raw, mode)
}

func (d *engineDriver) ClaimLinesAttempt(ctx context.Context, tx pgx.Tx, _ bool, shop int64, checkout uuid.UUID, in, want []holdfast.Line) (*holdfast.Hold, error) {
	return d.c().claimLinesOnce(ctx, tx, shop, checkout, in, want)
}

func (d *engineDriver) ReadInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	return d.c().checkInvariant(ctx)
}

func (d *engineDriver) MaintenanceAttempt(ctx context.Context, route string, fn func(tx pgx.Tx) error) error {
	return d.c().once(ctx, d.c().maintenance(), route, true, fn)
}

func (d *engineDriver) SweepAttempt(ctx context.Context, tx pgx.Tx, limit int) (int, error) {
	return d.c().sweepAttempt(ctx, tx, limit)
}

func (d *engineDriver) PurgeAttempt(ctx context.Context, tx pgx.Tx, limit int) (int, error) {
	return d.c().purgeAttempt(ctx, tx, limit)
}

func (d *engineDriver) ReplenishAttempt(ctx context.Context, tx pgx.Tx, after holdfast.Key, limit int) (int, holdfast.Key, int, error) {
	return d.c().replenishAttempt(ctx, tx, after, limit)
}

func (d *engineDriver) AnyWaiting(ctx context.Context) (bool, error) { return d.c().anyWaiting(ctx) }

func (d *engineDriver) WaitServeLock(ctx context.Context, tx pgx.Tx) error {
	return d.c().waitServeLock(ctx, tx)
}

func (d *engineDriver) ExpireWaits(ctx context.Context, tx pgx.Tx) (int, error) {
	return d.c().expireWaits(ctx, tx)
}

func (d *engineDriver) WaitWindow(ctx context.Context, tx pgx.Tx, from holdfast.Key, limit int) ([]holdfast.Key, error) {
	return d.c().waitWindow(ctx, tx, from, limit)
}

func (d *engineDriver) WaitHeads(ctx context.Context, tx pgx.Tx, keys []holdfast.Key) ([]driver.Waiter, error) {
	return d.c().waitHeads(ctx, tx, keys)
}

// LockWaitKey: an advisory lock, there for every key.
func (d *engineDriver) LockWaitKey(ctx context.Context, tx pgx.Tx, k holdfast.Key) (bool, error) {
	_, err := tx.Exec(ctx, d.c().q(ctx, holdfast.RouteReplenish, "lock_key"), keyHash(k))
	return err == nil, err
}

func (d *engineDriver) EndUnservableWaits(ctx context.Context, tx pgx.Tx, keys []holdfast.Key, locked map[holdfast.Key]bool) (int, error) {
	return d.c().endUnservable(ctx, tx, keys, locked)
}

func (d *engineDriver) GrantWait(ctx context.Context, tx pgx.Tx, w driver.Waiter) (*holdfast.Hold, bool, error) {
	return d.c().grantWait(ctx, tx, w)
}

// RefillWaitKeys: refill.sql skips the keys that still have waiters.
func (d *engineDriver) RefillWaitKeys(ctx context.Context, tx pgx.Tx, keys []holdfast.Key, _ map[holdfast.Key]bool) error {
	_, err := d.c().refill(ctx, tx, holdfast.RouteReplenish, keys)
	return err
}

// CombinedClaimAttempt: driver.ClaimCombiner (claimcombine.go).
func (d *engineDriver) CombinedClaimAttempt(ctx context.Context, claims []driver.ClaimRequest) ([]*holdfast.Hold, error) {
	return d.c().combinedClaimAttempt(ctx, claims)
}
