package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

func (ceilingEngine) SetDrop(context.Context, holdfast.DropParams) (*holdfast.Drop, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Drop(context.Context, holdfast.Key) (*holdfast.Drop, error) {
	return nil, holdfast.ErrUnavailable
}
