package holdfast

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a caller tells apart with errors.Is. Each is documented with what the
// caller should do.
var (
	// ErrInvalidArgument: the request is malformed; nothing was written. Fix
	// the request. The error is an *ArgumentError naming the field.
	ErrInvalidArgument = errors.New("holdfast: invalid argument")
	// ErrInsufficientStock: Reserve could not hold every line; nothing was
	// held. The error is an *InsufficientStockError naming every short line.
	ErrInsufficientStock = errors.New("holdfast: insufficient stock")
	// ErrNotStocked: Reserve (and ReserveTx) could not hold a line because no stock has
	// ever been set for its key — often a mistyped item or location id,
	// which would otherwise look like a sell-out. The error is an
	// *InsufficientStockError whose every line is NotStocked; it also
	// matches ErrInsufficientStock. Set the key's stock (ChangeStock) or
	// fix the ids.
	ErrNotStocked = errors.New("holdfast: no stock has been set")
	// ErrIdempotencyConflict: the shop's checkout id is already used with
	// other lines (checkout ids are scoped per shop: another shop's use of
	// the same id is a different checkout), or a stock change id is already
	// used with another change. Use a new id.
	ErrIdempotencyConflict = errors.New("holdfast: checkout id already used with other lines")
	// ErrNotFound: no hold or outcome is known for the checkout (never
	// reserved, or its outcome record is past the retention window).
	ErrNotFound = errors.New("holdfast: checkout not found")
	// ErrHoldClaimed: the checkout was claimed; it cannot be released or
	// reserved again. Nothing to undo.
	ErrHoldClaimed = errors.New("holdfast: hold already claimed")
	// ErrHoldReleased: the checkout was released; it cannot be claimed.
	// Refund the buyer, or reserve under a new checkout id.
	ErrHoldReleased = errors.New("holdfast: hold already released")
	// ErrHoldExpired: the hold expired and its units went back. From Claim it
	// is an *ExpiredError with the lines that could not be taken afresh:
	// refund the buyer. From Reserve or Extend: use a new checkout id.
	// Release never returns it: releasing an expired hold answers the hold
	// with Status expired (nothing left to give back) — also a hold past its
	// expiry that was not swept yet, which the release ends as expired and
	// whose units it gives back. Before the sweep such a hold reads as
	// Status expired with Claimable set (Hold, a Reserve retry): a Claim
	// still succeeds.
	ErrHoldExpired = errors.New("holdfast: hold expired")
	// ErrLifetimeExceeded: Extend would move the expiry past the hold's
	// deadline (Config.HoldLifetimeMax after it was created).
	ErrLifetimeExceeded = errors.New("holdfast: hold lifetime cap reached")
	// ErrOverCommitted: a claim needs more than the key's available stock
	// after a stock reduction. The hold stays; release it and refund.
	ErrOverCommitted = errors.New("holdfast: key over-committed")
	// ErrUnavailable: the database could not be reached or kept failing
	// after bounded retries, and no COMMIT was left unacknowledged: nothing
	// changed. Retry later with the same checkout id.
	ErrUnavailable = errors.New("holdfast: database unavailable")
	// ErrOutcomeUnknown: the operation's COMMIT was sent but not
	// acknowledged — the connection failed, or the caller's context ended
	// while the server was committing — and it could not be retried: it may
	// or may not have happened. Reservations, claims, releases, extensions
	// and stock changes sent with an ID are safe to retry with the same
	// checkout id / change ID, which answers the outcome. A stock change
	// without an ID: read the level and the ledger before sending it again.
	// Never the same as ErrUnavailable, which means nothing changed.
	ErrOutcomeUnknown = errors.New("holdfast: outcome unknown")
	// ErrTxRolledBack: a …Tx call (MySQL/MariaDB engine) found the
	// caller's transaction rolled back by the database — InnoDB rolls the
	// whole transaction back after a deadlock (1213, or 1467 on an AUTO-INC
	// lock) and after a lock wait timeout (1205) under
	// innodb_rollback_on_timeout. Nothing the caller did in it was kept,
	// and statements sent on it would now run outside any transaction, so
	// the call was not retried. Roll the caller's transaction back and run
	// all of it again. The error also matches ErrUnavailable.
	ErrTxRolledBack = errors.New("holdfast: the caller's transaction was rolled back")
)

// Errors of postgres.New about the database schema.
var (
	// ErrSchemaMissing: the database has no holdfast schema. Run
	// `holdfast migrate` (or migrations.Up, package postgres/migrations) first.
	ErrSchemaMissing = errors.New("holdfast: database has no holdfast schema; run `holdfast migrate`")
	// ErrSchemaOutdated: the database's schema is older than this engine
	// needs (postgres.SchemaVersion). Run `holdfast migrate` (or migrations.Up)
	// first.
	ErrSchemaOutdated = errors.New("holdfast: database schema is outdated; run `holdfast migrate`")
)

// ArgumentError is a rejected argument. It matches ErrInvalidArgument.
type ArgumentError struct {
	Field  string // the offending field, e.g. "lines[2].quantity"
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("holdfast: invalid %s: %s", e.Field, e.Reason)
}

func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// NewArgumentError returns an *ArgumentError for field: the typed error every
// engine answers bad input with (errors.Is(err, ErrInvalidArgument)).
func NewArgumentError(field, format string, args ...any) error {
	return &ArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// InsufficientStockError names every line a reservation could not hold. It
// matches ErrInsufficientStock.
type InsufficientStockError struct {
	Lines []Shortfall
}

func (e *InsufficientStockError) Error() string {
	parts := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		if l.NotStocked {
			parts[i] = fmt.Sprintf("item %d at location %d: requested %d, no stock has been set", l.ItemID, l.LocationID, l.Requested)
			continue
		}
		parts[i] = fmt.Sprintf("item %d at location %d: requested %d, sellable %d", l.ItemID, l.LocationID, l.Requested, l.Sellable)
	}
	return "holdfast: insufficient stock: " + strings.Join(parts, "; ")
}

// Is matches ErrInsufficientStock, and ErrNotStocked when no short line's
// key has ever had stock set.
func (e *InsufficientStockError) Is(target error) bool {
	return target == ErrInsufficientStock || (target == ErrNotStocked && e.NotStocked())
}

// NotStocked reports whether every short line's key has never had stock
// set (Shortfall.NotStocked).
func (e *InsufficientStockError) NotStocked() bool {
	for _, l := range e.Lines {
		if !l.NotStocked {
			return false
		}
	}
	return len(e.Lines) > 0
}

// ExpiredError is a late claim that could not be served: the hold expired,
// its units went back, and these lines could not be taken afresh. It matches
// ErrHoldExpired.
type ExpiredError struct {
	Lines []Shortfall
}

func (e *ExpiredError) Error() string {
	if len(e.Lines) == 0 {
		return ErrHoldExpired.Error()
	}
	return ErrHoldExpired.Error() + " and not re-acquirable: " + (&InsufficientStockError{Lines: e.Lines}).Error()[len("holdfast: "):]
}

func (e *ExpiredError) Is(target error) bool { return target == ErrHoldExpired }

// ErrInvalidCursor: a listing's cursor (HoldQuery.After, LedgerQuery.After)
// was issued by another listing — another shop, key or filters — so it
// names no position in this one. Nothing was read. List again from the
// first page. The error is a *CursorError; it also matches
// ErrInvalidArgument.
var ErrInvalidCursor = errors.New("holdfast: cursor of another listing")

// CursorError is a cursor used on a listing other than the one that issued
// it. It matches ErrInvalidCursor, and wraps an *ArgumentError for field
// "cursor" (so it matches ErrInvalidArgument too, and code that reports
// argument errors by field reports it unchanged).
type CursorError struct {
	Reason string
}

func (e *CursorError) Error() string { return "holdfast: invalid cursor: " + e.Reason }

func (e *CursorError) Is(target error) bool { return target == ErrInvalidCursor }

func (e *CursorError) Unwrap() error { return &ArgumentError{Field: "cursor", Reason: e.Reason} }
