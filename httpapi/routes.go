package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Route names: the "route" label of metrics and log lines.
const (
	routeReserve     = "reserve"
	routeClaim       = "claim"
	routeRelease     = "release"
	routeExtend      = "extend"
	routeGetHold     = "get_reservation"
	routeSetStock    = "set_inventory"
	routeAdjustStock = "adjust_inventory"
	routeGetStock    = "get_inventory"
)

func (s *Server) routes() {
	const res = "/v1/shops/{shop_id}/reservations"
	const inv = "/v1/shops/{shop_id}/inventory/{item_id}/{location_id}"
	s.handle("POST "+res, routeReserve, routeOpts{body: true}, s.reserve)
	s.handle("GET "+res+"/{checkout_id}", routeGetHold, routeOpts{}, s.getHold)
	s.handle("POST "+res+"/{checkout_id}/claim", routeClaim, routeOpts{optional: true}, s.claim)
	s.handle("POST "+res+"/{checkout_id}/release", routeRelease, routeOpts{optional: true}, s.release)
	s.handle("POST "+res+"/{checkout_id}/extend", routeExtend, routeOpts{body: true}, s.extend)
	s.handle("PUT "+inv, routeSetStock, routeOpts{body: true}, s.setStock)
	s.handle("POST "+inv+"/adjust", routeAdjustStock, routeOpts{body: true}, s.adjustStock)
	s.handle("GET "+inv, routeGetStock, routeOpts{}, s.getStock)

	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		r.Context().Value(infoKey{}).(*reqInfo).route = "healthz"
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		r.Context().Value(infoKey{}).(*reqInfo).route = "openapi"
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	if !s.cfg.NoMetricsRoute {
		m := s.MetricsHandler()
		s.mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			r.Context().Value(infoKey{}).(*reqInfo).route = "metrics"
			m.ServeHTTP(w, r)
		})
	}
}

// holdJSON is a hold on the wire.
type holdJSON struct {
	CheckoutID uuid.UUID  `json:"checkout_id"`
	ShopID     int64      `json:"shop_id"`
	Status     string     `json:"status"`
	Lines      []lineJSON `json:"lines"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	Deadline   time.Time  `json:"deadline"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
}

type lineJSON struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	Quantity   int   `json:"quantity"`
}

func toHoldJSON(h *holdfast.Hold) holdJSON {
	out := holdJSON{
		CheckoutID: h.CheckoutID, ShopID: h.ShopID, Status: string(h.Status), Lines: make([]lineJSON, len(h.Lines)),
		CreatedAt: h.CreatedAt.UTC(), ExpiresAt: h.ExpiresAt.UTC(), Deadline: h.Deadline.UTC(),
	}
	for i, l := range h.Lines {
		out.Lines[i] = lineJSON(l)
	}
	if h.EndedAt != nil {
		t := h.EndedAt.UTC()
		out.EndedAt = &t
	}
	return out
}

// levelJSON is a key's stock on the wire.
type levelJSON struct {
	ShopID        int64  `json:"shop_id"`
	ItemID        int64  `json:"item_id"`
	LocationID    int64  `json:"location_id"`
	Available     int    `json:"available"`
	Held          int    `json:"held"`
	Pooled        int    `json:"pooled"`
	Sellable      int    `json:"sellable"`
	OverCommitted bool   `json:"over_committed"`
	Strategy      string `json:"strategy"`
}

func toLevelJSON(l *holdfast.Level) levelJSON {
	return levelJSON{
		ShopID: l.ShopID, ItemID: l.ItemID, LocationID: l.LocationID,
		Available: l.Available, Held: l.Held, Pooled: l.Pooled, Sellable: l.Sellable,
		OverCommitted: l.OverCommitted, Strategy: string(l.Strategy),
	}
}

func (s *Server) reserve(c *call) (int, any, error) {
	p, apiErr := decodeReserve(c.shop, c.body, s.limits)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var h *holdfast.Hold
	err := c.do(func(ctx context.Context) (err error) {
		h, err = s.hc.Reserve(ctx, p)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusCreated
	if h.Replayed {
		status = http.StatusOK
	}
	return status, toHoldJSON(h), nil
}

func (c *call) checkout() (uuid.UUID, *apiError) {
	return parseCheckoutID("checkout_id", c.r.PathValue("checkout_id"))
}

// lifecycle serves claim, release and get: a checkout in the path, no input.
func (s *Server) lifecycle(c *call, op func(ctx context.Context, shop int64, id uuid.UUID) (*holdfast.Hold, error)) (int, any, error) {
	id, apiErr := c.checkout()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	var h *holdfast.Hold
	err := c.do(func(ctx context.Context) (err error) {
		h, err = op(ctx, c.shop, id)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toHoldJSON(h), nil
}

func (s *Server) claim(c *call) (int, any, error)   { return s.lifecycle(c, s.hc.Claim) }
func (s *Server) release(c *call) (int, any, error) { return s.lifecycle(c, s.hc.Release) }
func (s *Server) getHold(c *call) (int, any, error) { return s.lifecycle(c, s.hc.Hold) }

func (s *Server) extend(c *call) (int, any, error) {
	id, apiErr := c.checkout()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	ttl, apiErr := decodeExtend(c.body, s.limits)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var h *holdfast.Hold
	err := c.do(func(ctx context.Context) (err error) {
		h, err = s.hc.Extend(ctx, c.shop, id, ttl)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toHoldJSON(h), nil
}

func (c *call) key() (holdfast.Key, *apiError) {
	k := holdfast.Key{ShopID: c.shop}
	var err *apiError
	if k.ItemID, err = parseID("item_id", c.r.PathValue("item_id")); err != nil {
		return k, err
	}
	k.LocationID, err = parseID("location_id", c.r.PathValue("location_id"))
	return k, err
}

func (s *Server) stock(c *call, member string, op func(ctx context.Context, k holdfast.Key, ch stockChange) (*holdfast.Level, error)) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var ch stockChange
	if member != "" {
		if ch, apiErr = decodeStock(c.body, member); apiErr != nil {
			return 0, nil, apiErr
		}
	}
	var l *holdfast.Level
	err := c.do(func(ctx context.Context) (err error) {
		l, err = op(ctx, k, ch)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toLevelJSON(l), nil
}

func (s *Server) setStock(c *call) (int, any, error) {
	return s.stock(c, "available", func(ctx context.Context, k holdfast.Key, ch stockChange) (*holdfast.Level, error) {
		return s.hc.SetAvailable(ctx, k, ch.value, ch.reason, ch.reference)
	})
}

func (s *Server) adjustStock(c *call) (int, any, error) {
	return s.stock(c, "delta", func(ctx context.Context, k holdfast.Key, ch stockChange) (*holdfast.Level, error) {
		return s.hc.Adjust(ctx, k, ch.value, ch.reason, ch.reference)
	})
}

func (s *Server) getStock(c *call) (int, any, error) {
	return s.stock(c, "", func(ctx context.Context, k holdfast.Key, _ stockChange) (*holdfast.Level, error) {
		return s.hc.Level(ctx, k)
	})
}
