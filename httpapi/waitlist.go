package httpapi

// The waitlist over HTTP (issue #17 item 2): wait_seconds on a
// reservation, 202 {"status": "waiting"} while the checkout waits (from
// the reservation and from GET of the checkout), 410 wait_expired once
// its wait ran out.

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// ServeWaitlist: the ceiling engine has no waitlist.
func (ceilingEngine) ServeWaitlist(context.Context) (int, error) { return 0, holdfast.ErrUnavailable }

// waitingJSON is the answer for a checkout in a waitlist: 202 from a
// reservation that asked to wait (wait_seconds) and from reading the
// checkout while it waits.
type waitingJSON struct {
	CheckoutID uuid.UUID       `json:"checkout_id"`
	ShopID     int64           `json:"shop_id"`
	Status     string          `json:"status"` // always "waiting"
	Position   int             `json:"position"`
	WaitUntil  time.Time       `json:"wait_until"`
	Lines      []shortfallJSON `json:"lines"`
}

// waiting answers err when it says the checkout waits.
func waiting(shop int64, id uuid.UUID, err error) (int, any, bool) {
	var we *holdfast.WaitlistedError
	if !errors.As(err, &we) {
		return 0, nil, false
	}
	out := waitingJSON{CheckoutID: id, ShopID: shop, Status: "waiting", Position: we.Position, WaitUntil: we.WaitUntil.UTC(), Lines: []shortfallJSON{}}
	for _, l := range we.Lines {
		out.Lines = append(out.Lines, shortfallJSON(l))
	}
	return http.StatusAccepted, out, true
}

// waitSeconds reads wait_seconds within [0, WaitMax].
func (o *object) waitSeconds(lim limits) (time.Duration, *apiError) {
	v, ok, err := o.int64("wait_seconds", false, 0, int64(lim.WaitMax/time.Second))
	if err != nil || !ok {
		return 0, err
	}
	return time.Duration(v) * time.Second, nil
}
