package holdfast

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// OpMerge names MergeCheckouts in statements' comments, metrics and logs.
const OpMerge = "merge"

// MergeIntoError is MergeCheckouts' answer when the destination checkout
// has a hold that can no longer take lines: it was claimed, released or
// has expired (Err is ErrHoldClaimed, ErrHoldReleased or ErrHoldExpired,
// and errors.Is sees it), or it has no hold because it waits for stock
// (ErrCheckoutWaiting) or its wait ended without one (ErrWaitExpired,
// ErrWaitCancelled, ErrWaitUnservable). Nothing changed: the source still holds its
// lines. Callers reserve the source's lines into a new checkout, or keep
// the source.
type MergeIntoError struct {
	Into uuid.UUID
	Err  error
}

func (e *MergeIntoError) Error() string {
	return fmt.Sprintf("holdfast: cannot merge into checkout %s: %v", e.Into, e.Err)
}

func (e *MergeIntoError) Unwrap() error { return e.Err }

// ErrMergeInto matches every *MergeIntoError (errors.Is).
var ErrMergeInto = errors.New("holdfast: merge destination has ended")

// Is makes errors.Is(err, ErrMergeInto) true for a *MergeIntoError.
func (e *MergeIntoError) Is(target error) bool { return target == ErrMergeInto }
