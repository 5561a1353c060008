package engine

import (
	"errors"

	"github.com/holdfast/holdfast"
)

// Outcome names an operation's result for metrics (Observer.Op), alike on
// every driver.
func Outcome(err error, h *holdfast.Hold) string {
	switch {
	case err == nil && h != nil && h.Replayed:
		return "replayed"
	case err == nil && h != nil:
		return string(h.Status)
	case err == nil:
		return "ok"
	case errors.Is(err, holdfast.ErrInvalidArgument):
		return "invalid"
	case errors.Is(err, holdfast.ErrInsufficientStock):
		return "insufficient_stock"
	case errors.Is(err, holdfast.ErrBuyerLimitExceeded):
		return "buyer_limit_exceeded"
	case errors.Is(err, holdfast.ErrIdempotencyConflict):
		return "conflict"
	case errors.Is(err, holdfast.ErrNotFound):
		return "not_found"
	case errors.Is(err, holdfast.ErrHoldClaimed):
		return "hold_claimed"
	case errors.Is(err, holdfast.ErrHoldReleased):
		return "hold_released"
	case errors.Is(err, holdfast.ErrHoldExpired):
		return "hold_expired"
	case errors.Is(err, holdfast.ErrLifetimeExceeded):
		return "lifetime_exceeded"
	case errors.Is(err, holdfast.ErrOverCommitted):
		return "over_committed"
	case errors.Is(err, holdfast.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, holdfast.ErrWaitlisted):
		return "waitlisted"
	case errors.Is(err, holdfast.ErrWaitExpired):
		return "wait_expired"
	case errors.Is(err, holdfast.ErrWaitCancelled):
		return "wait_cancelled"
	case errors.Is(err, holdfast.ErrWaitUnservable):
		return "wait_unservable"
	case errors.Is(err, holdfast.ErrRevisionConflict):
		return "revision_conflict"
	case errors.Is(err, holdfast.ErrStockChanged):
		return "stock_changed"
	}
	return "error"
}
