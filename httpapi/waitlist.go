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
	"github.com/holdfast/holdfast/wire"
)

// ServeWaitlist: the ceiling engine has no waitlist.
func (ceilingEngine) ServeWaitlist(context.Context) (int, error) { return 0, holdfast.ErrUnavailable }

// waiting answers err when it says the checkout waits.
func waiting(shop int64, id uuid.UUID, err error) (int, any, bool) {
	var we *holdfast.WaitlistedError
	if !errors.As(err, &we) {
		return 0, nil, false
	}
	return http.StatusAccepted, wire.FromWaitlisted(shop, id, we), true
}

// waitSeconds reads wait_seconds within [0, WaitMax].
func (o *object) waitSeconds(lim limits) (time.Duration, *apiError) {
	v, ok, err := o.int64("wait_seconds", false, 0, int64(lim.WaitMax/time.Second))
	if err != nil || !ok {
		return 0, err
	}
	return time.Duration(v) * time.Second, nil
}
