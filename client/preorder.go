package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// preorderWire is a key's pre-order setting on the wire.
type preorderWire struct {
	ShopID     int64      `json:"shop_id"`
	ItemID     int64      `json:"item_id"`
	LocationID int64      `json:"location_id"`
	Cap        int        `json:"cap"`
	ExpectedAt *wire.Time `json:"expected_at,omitempty"`
	Held       int        `json:"held"`
	Owed       int        `json:"owed"`
	Headroom   int        `json:"headroom"`
}

func (p preorderWire) preorder() *holdfast.Preorder {
	out := &holdfast.Preorder{Key: holdfast.Key{ShopID: p.ShopID, ItemID: p.ItemID, LocationID: p.LocationID},
		Cap: p.Cap, Held: p.Held, Owed: p.Owed, Headroom: p.Headroom}
	if p.ExpectedAt != nil {
		out.ExpectedAt = p.ExpectedAt.Time
	}
	return out
}

func preorderPath(k holdfast.Key) string {
	return fmt.Sprintf("/v1/shops/%d/inventory/%d/%d/preorder", k.ShopID, k.ItemID, k.LocationID)
}

// SetPreorder sets a key's pre-order cap and expected date (PUT
// …/preorder; cap 0 turns pre-orders off) and answers the setting with its
// counts. A cap below the units outstanding is an invalid_argument on cap.
// Safe to retry.
func (c *Client) SetPreorder(ctx context.Context, p holdfast.Preorder) (*holdfast.Preorder, error) {
	body := map[string]any{"cap": p.Cap}
	if !p.ExpectedAt.IsZero() {
		body["expected_at"] = p.ExpectedAt.UTC().Format(time.RFC3339Nano)
	}
	var out preorderWire
	if _, err := c.do(ctx, http.MethodPut, preorderPath(p.Key), body, &out, true); err != nil {
		return nil, err
	}
	return out.preorder(), nil
}

// Preorder reads a key's pre-order setting and counts (GET …/preorder;
// Cap 0: off).
func (c *Client) Preorder(ctx context.Context, k holdfast.Key) (*holdfast.Preorder, error) {
	var out preorderWire
	if _, err := c.do(ctx, http.MethodGet, preorderPath(k), nil, &out, true); err != nil {
		return nil, err
	}
	return out.preorder(), nil
}
