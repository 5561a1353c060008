package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

func (ceilingEngine) SetBundle(context.Context, holdfast.Bundle) error {
	return holdfast.ErrUnavailable
}
func (ceilingEngine) Bundle(context.Context, int64, int64) (*holdfast.Bundle, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) DeleteBundle(context.Context, int64, int64) error {
	return holdfast.ErrUnavailable
}
