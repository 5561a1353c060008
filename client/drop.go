package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func dropPath(k holdfast.Key) string {
	return fmt.Sprintf("/v1/shops/%d/inventory/%d/%d/drop", k.ShopID, k.ItemID, k.LocationID)
}

// SetDrop sets a key's drop (holdfast.DropParams; the window in whole
// seconds). A refused one is an *Error with status 4xx naming the field;
// one whose window has begun matches holdfast.ErrDropStarted. Not retried
// on its own: a drop that starts now and was set by a lost answer would be
// refused by the retry as started — read it with Drop instead.
func (c *Client) SetDrop(ctx context.Context, p holdfast.DropParams) (*holdfast.Drop, error) {
	body := map[string]any{"window_seconds": int64(p.Window / time.Second)}
	if !p.StartsAt.IsZero() {
		body["starts_at"] = p.StartsAt.UTC().Format(time.RFC3339Nano)
	}
	var w wire.Drop
	if _, err := c.do(ctx, http.MethodPut, dropPath(p.Key), body, &w, false); err != nil {
		return nil, err
	}
	return w.Drop(), nil
}

// Drop reads a key's drop: its commitment, and after the draw its seed and
// entrants in lottery order (check it with holdfast.VerifyDrop); an *Error
// matching holdfast.ErrNotFound when the key has none.
func (c *Client) Drop(ctx context.Context, k holdfast.Key) (*holdfast.Drop, error) {
	var w wire.Drop
	if _, err := c.do(ctx, http.MethodGet, dropPath(k), nil, &w, true); err != nil {
		return nil, err
	}
	return w.Drop(), nil
}
