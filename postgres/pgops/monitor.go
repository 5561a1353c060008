package pgops

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// MonitorConfig configures a Monitor: the activity sampler and the bloat
// monitor. The zero value means both with their defaults.
type MonitorConfig struct {
	Sampler SamplerConfig
	Bloat   BloatConfig
}

// Monitor is the activity Sampler and the BloatMonitor behind one
// Register/Start/Stop, for `holdfast serve`:
//
//	m := ops.NewMonitor(pool, ops.MonitorConfig{})
//	if err := m.Register(reg); err != nil { … }
//	m.Start(ctx)
//	defer m.Stop(shutdownCtx)
type Monitor struct {
	Sampler *Sampler
	Bloat   *BloatMonitor
}

// NewMonitor returns a Monitor on pool; Start runs it.
func NewMonitor(pool *pgxpool.Pool, cfg MonitorConfig) *Monitor {
	return &Monitor{Sampler: NewSampler(pool, cfg.Sampler), Bloat: NewBloatMonitor(pool, cfg.Bloat)}
}

// Register registers both collectors on reg.
func (m *Monitor) Register(reg prometheus.Registerer) error {
	if err := m.Sampler.Register(reg); err != nil {
		return err
	}
	return m.Bloat.Register(reg)
}

// Start starts both workers. It does not block.
func (m *Monitor) Start(ctx context.Context) {
	m.Sampler.Start(ctx)
	m.Bloat.Start(ctx)
}

// Stop stops both workers; idempotent, safe before Start, bounded by ctx.
func (m *Monitor) Stop(ctx context.Context) error {
	return errors.Join(m.Sampler.Stop(ctx), m.Bloat.Stop(ctx))
}
