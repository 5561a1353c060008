package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// Availability implements holdfast.Engine from the side that is the truth:
// holdfast's read where holdfast is (primary, holdfast); where the legacy
// is (legacy, shadow), the legacy's reservable count of each key, as Level
// answers it — one legacy read per key, so bounded by the query's bounds
// (holdfast.AvailabilityItemsMax × holdfast.LocationOrderMax). The legacy
// store has no waitlist and no safety stock, and cannot say a key was
// never stocked. Without locations, the shop's default order is
// holdfast's (the legacy store keeps none).
func (e *Engine) Availability(ctx context.Context, q holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	if m := e.bind(q.ShopID).mode; m == ModePrimary || m == ModeHoldfast {
		return e.hf.Availability(ctx, q)
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	locs := q.Locations
	if len(locs) == 0 {
		var err error
		if locs, err = e.hf.LocationOrder(ctx, q.ShopID); err != nil {
			return nil, err
		}
		if len(locs) == 0 {
			return nil, holdfast.NewArgumentError("locations", "the shop has no default location order: name the locations, or set an order")
		}
	}
	out := &holdfast.Availability{ShopID: q.ShopID, Locations: locs, Items: make([]holdfast.ItemAvailability, 0, len(q.Items))}
	for _, item := range q.Items {
		ia := holdfast.ItemAvailability{ItemID: item, Locations: make([]holdfast.LocationAvailability, 0, len(locs))}
		for _, loc := range locs {
			c, err := e.old.Count(ctx, holdfast.Key{ShopID: q.ShopID, ItemID: item, LocationID: loc})
			if err != nil {
				return nil, err
			}
			s := int(max(c.Reservable, 0))
			ia.Locations = append(ia.Locations, holdfast.LocationAvailability{LocationID: loc, Sellable: s})
			ia.Sellable += s
			ia.Whole = max(ia.Whole, s)
		}
		out.Items = append(out.Items, ia)
	}
	return out, nil
}
