package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// routeSetStrategy names the route that chooses a key's allocation strategy.
const routeSetStrategy = "set_strategy"

// strategyRoutes registers PUT …/inventory/{item}/{location}/strategy: an
// operator's choice of a key's allocation strategy (docs/PERFORMANCE.md),
// so it needs an admin key. The answer is the key's stock, as PUT of the
// stock answers, its strategy the new one.
func (s *Server) strategyRoutes() {
	const p = "/v1/shops/{shop_id}/inventory/{item_id}/{location_id}/strategy"
	s.handle("PUT "+p, routeSetStrategy, routeOpts{body: true, admin: true}, s.setStrategy)
}

func (s *Server) setStrategy(c *call) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "strategy", "pool_cap")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	name, apiErr := o.string("strategy", true, 32)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	st := holdfast.Strategy(name)
	if offered := s.strategies(); !slices.Contains(offered, st) {
		return 0, nil, invalid("strategy", "unknown strategy %q (%s)", name, orList(offered))
	}
	capv, _, apiErr := o.int64("pool_cap", false, 0, holdfast.PoolCapLimit)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var l *holdfast.Level
	err := c.do(func(ctx context.Context) (err error) {
		l, err = s.eng.SetStrategy(ctx, k, st, int(capv))
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromLevel(l), nil
}

// strategies are the engine's own allocation strategies
// (Config.Strategies; MySQL offers a subset, mysql.Strategies).
func (s *Server) strategies() []holdfast.Strategy {
	if len(s.cfg.Strategies) > 0 {
		return s.cfg.Strategies
	}
	if e, ok := s.eng.(interface{ Strategies() []holdfast.Strategy }); ok {
		return e.Strategies()
	}
	return holdfast.Strategies()
}

// orList is "a, b, c or d".
func orList(ss []holdfast.Strategy) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
