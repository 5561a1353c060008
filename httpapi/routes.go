package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
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
	const store, stock = ScopeStorefront, ScopeInventory
	s.handle("POST "+res, routeReserve, routeOpts{body: true, scope: store}, s.reserve)
	s.handle("GET "+res+"/{checkout_id}", routeGetHold, routeOpts{scope: store}, s.getHold)
	s.handle("POST "+res+"/{checkout_id}/claim", routeClaim, routeOpts{optional: true, scope: store}, s.claimRoute)
	s.handle("POST "+res+"/{checkout_id}/release", routeRelease, routeOpts{optional: true, scope: store}, s.release)
	s.handle("POST "+res+"/{checkout_id}/extend", routeExtend, routeOpts{body: true, scope: store}, s.extend)
	s.handle("PUT "+inv, routeSetStock, routeOpts{body: true, scope: stock}, s.setStock)
	s.handle("POST "+inv+"/adjust", routeAdjustStock, routeOpts{body: true, scope: stock}, s.adjustStock)
	s.handle("GET "+inv, routeGetStock, routeOpts{}, s.getStock)
	s.shadowRoutes()
	s.listingRoutes()
	s.eventRoutes()
	s.editRoutes()
	s.buyerRoutes() // buyer.go: per-buyer limits, safety stock
	s.allocationRoutes()
	s.strategyRoutes() // strategy.go: a key's allocation strategy (admin)
	s.stockImportRoutes()
	s.availabilityRoutes() // availability.go: what a buyer could reserve now
	s.auditRoutes()        // audit.go: admin cancel and the audit log (admin)
	s.mergeRoutes()        // merge.go
	s.bundleRoutes()       // bundle.go: bundle items (issue #30 item 1)
	s.dropRoutes()         // drop.go: fair drops (issue #30 item 7)
	s.preorderRoutes()     // preorder.go: pre-orders (issue #30 item 2)
	s.podsRoutes()         // pods.go: pods and shop moves (admin; issue #28 item 2)
	s.precreateSeries()

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
		m := s.metricsOnly()
		// On the API's listener the metrics (pool, database sessions,
		// routes) are for operators: an admin key is required.
		s.mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			info := r.Context().Value(infoKey{}).(*reqInfo)
			info.route = "metrics"
			p, err := s.bearer(r.Context(), r)
			if err == nil && !p.admin {
				err = &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "/metrics needs an admin key (or serve it on its own address)"}
			}
			if err != nil {
				writeError(w, s.apiErrorOf("metrics", err))
				return
			}
			info.keyID = p.keyID
			m.ServeHTTP(w, r)
		})
	}
}

func (s *Server) reserve(c *call) (int, any, error) {
	p, ok := fastReserve(c.shop, c.body, s.limits)
	if !ok {
		var apiErr *apiError
		if p, apiErr = decodeReserve(c.shop, c.body, s.limits); apiErr != nil {
			return 0, nil, apiErr
		}
	}
	var h *holdfast.Hold
	run := c.do
	if s.combinable(p) {
		run = c.doCombinable
	}
	err := run(func(ctx context.Context) (err error) {
		h, err = s.eng.Reserve(ctx, p)
		return err
	})
	if status, body, ok := waiting(c.shop, p.CheckoutID, err); ok { // waitlist.go
		return status, body, nil
	}
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusCreated
	if h.Replayed {
		status = http.StatusOK
	}
	return status, wire.FromHold(h), nil
}

// Combiner is implemented by engines that combine concurrent reservations
// into shared transactions, to say which ones they would combine. The
// server admits those without a connection slot: they wait in the
// engine's combiner.
type Combiner interface {
	Combinable(p holdfast.ReserveParams) bool
}

// combinable reports whether the engine will combine p with others: as the
// engine says (Combiner), else a one-line reservation when the engine's
// default strategy is batch. A key set to another strategy then takes the
// engine's plain path without a slot, bounded by CombineInFlightMax.
func (s *Server) combinable(p holdfast.ReserveParams) bool {
	if cb, ok := s.eng.(Combiner); ok {
		return cb.Combinable(p)
	}
	return s.batch && p.CombinableShape()
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
	if status, body, ok := waiting(c.shop, id, err); ok { // waitlist.go
		return status, body, nil
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromHold(h), nil
}

func (s *Server) claim(c *call) (int, any, error)   { return s.lifecycle(c, s.eng.Claim) }
func (s *Server) release(c *call) (int, any, error) { return s.lifecycle(c, s.eng.Release) }
func (s *Server) getHold(c *call) (int, any, error) { return s.lifecycle(c, s.eng.Hold) }

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
		h, err = s.eng.Extend(ctx, c.shop, id, ttl)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromHold(h), nil
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

func (s *Server) stock(c *call, member string) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if member == "" {
		var l *holdfast.Level
		err := c.do(func(ctx context.Context) (err error) {
			l, err = s.eng.Level(ctx, k)
			return err
		})
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, wire.FromLevel(l), nil
	}
	ch, apiErr := decodeStock(c.body, member, c.r.Header.Get("Idempotency-Key"))
	if apiErr != nil {
		return 0, nil, apiErr
	}
	ch.Key = k
	var l *holdfast.Level
	err := c.do(func(ctx context.Context) (err error) {
		l, err = s.eng.ChangeStock(ctx, ch)
		if err != nil && ctx.Err() != nil && !errors.Is(err, holdfast.ErrOutcomeUnknown) &&
			(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, holdfast.ErrUnavailable)) {
			// Given up while the change may be committing: the outcome is
			// unknown, never "retry, nothing happened".
			err = fmt.Errorf("%w: %w", holdfast.ErrOutcomeUnknown, err)
		}
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromLevel(l), nil
}

func (s *Server) setStock(c *call) (int, any, error)    { return s.stock(c, "available") }
func (s *Server) adjustStock(c *call) (int, any, error) { return s.stock(c, "delta") }
func (s *Server) getStock(c *call) (int, any, error)    { return s.stock(c, "") }

// precreateSeries makes the request series that dashboards and alerts read
// exist at zero from the start — every route's success, the reservation's
// sold-out answer and the overload and outage answers — so a fresh server
// shows 0, not "No data".
func (s *Server) precreateSeries() {
	for _, r := range []struct {
		route string
		ok    []int
	}{
		{routeReserve, []int{http.StatusCreated, http.StatusOK}},
		{routeGetHold, []int{http.StatusOK}},
		{routeClaim, []int{http.StatusOK}},
		{routeRelease, []int{http.StatusOK}},
		{routeExtend, []int{http.StatusOK}},
		{routeSetStock, []int{http.StatusOK}},
		{routeAdjustStock, []int{http.StatusOK}},
		{routeGetStock, []int{http.StatusOK}},
	} {
		for _, st := range r.ok {
			s.series(r.route, st, "ok")
		}
		s.series(r.route, http.StatusServiceUnavailable, CodeOverloaded)
		s.series(r.route, http.StatusServiceUnavailable, CodeUnavailable)
	}
	s.series(routeReserve, http.StatusConflict, CodeInsufficientStock)
	s.series(routeReserve, http.StatusAccepted, "ok") // waiting (waitlist.go)
}
