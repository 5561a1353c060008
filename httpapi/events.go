package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

func (ceilingEngine) Events(context.Context, int64, int64, int) ([]holdfast.Event, error) {
	return nil, holdfast.ErrUnavailable
}
