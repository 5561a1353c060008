package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

// ServeWaitlist: the ceiling engine has no waitlist.
func (ceilingEngine) ServeWaitlist(context.Context) (int, error) { return 0, holdfast.ErrUnavailable }
