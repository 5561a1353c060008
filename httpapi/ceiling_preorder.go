package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

func (ceilingEngine) SetPreorder(context.Context, holdfast.Preorder) (*holdfast.Preorder, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Preorder(context.Context, holdfast.Key) (*holdfast.Preorder, error) {
	return nil, holdfast.ErrUnavailable
}
