package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
)

// Ceiling returns a Server that does all the API does for a reservation —
// request id, log line, metrics, bearer key (from the cache), admission,
// decoding, validation, encoding — and answers from memory instead of a
// database: what HTTP and JSON cost on this machine, the ceiling the
// service is measured against (package httpbench, `holdfast bench
// --http`). key is the one key it accepts, for shopID with every scope.
// Only Reserve answers (a new hold, never stored); every other route is
// 503 unavailable. It is a measuring instrument, not an engine.
func Ceiling(key string, shopID int64, log *slog.Logger) (*Server, error) {
	if !wellFormed(key) {
		return nil, errors.New("httpapi: Ceiling needs a key made by CreateKey")
	}
	s, err := newServer(Config{Engine: ceilingEngine{}, Logger: log, Registry: prometheus.NewRegistry(),
		KeyCacheTTL: time.Hour, MaxInFlight: MaxInFlightDefault})
	if err != nil {
		return nil, err
	}
	s.batch = true
	s.auth.cache[sha256.Sum256([]byte(key))] = cachedKey{
		p:   principal{keyID: 1, shop: shopID, storefront: true, inventory: true},
		exp: time.Now().Add(100 * 365 * 24 * time.Hour),
	}
	s.auth.touched[1] = time.Now().Add(100 * 365 * 24 * time.Hour) // no last-use writes
	return s, nil
}

// ceilingEngine answers reservations from memory; see Ceiling.
type ceilingEngine struct{}

var _ holdfast.Engine = ceilingEngine{}

func (ceilingEngine) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	now := time.Now()
	ttl := p.TTL
	if ttl == 0 {
		ttl = holdfast.HoldTTLDefault
	}
	return &holdfast.Hold{CheckoutID: p.CheckoutID, ShopID: p.ShopID, Status: holdfast.StatusHeld, Lines: p.Lines, Revision: 1,
		CreatedAt: now, ExpiresAt: now.Add(ttl), Deadline: now.Add(holdfast.HoldLifetimeMaxDefault)}, nil
}

func (ceilingEngine) Claim(context.Context, int64, uuid.UUID) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Release(context.Context, int64, uuid.UUID) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Extend(context.Context, int64, uuid.UUID, time.Duration) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Hold(context.Context, int64, uuid.UUID) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) ChangeStock(context.Context, holdfast.StockChange) (*holdfast.Level, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) SetStrategy(context.Context, holdfast.Key, holdfast.Strategy, int) (*holdfast.Level, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Level(context.Context, holdfast.Key) (*holdfast.Level, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) CheckInvariant(context.Context) (*holdfast.InvariantReport, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) SweepOnce(context.Context) (int, error) { return 0, holdfast.ErrUnavailable }
func (ceilingEngine) Start(context.Context)                  {}
func (ceilingEngine) Stop(context.Context) error             { return nil }

func (ceilingEngine) ImportStock(context.Context, holdfast.StockImport) (*holdfast.StockImportResult, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) MergeCheckouts(context.Context, int64, uuid.UUID, uuid.UUID) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}
