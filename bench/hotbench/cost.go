package hotbench

import (
	"context"
	"math"
	"syscall"
	"time"
)

// What a hold costs: the database server's CPU time, this process's CPU
// time and the write-ahead (PostgreSQL) or redo (InnoDB) log bytes, over a
// measured window, divided by the holds granted in it.

// Meter is implemented by a Target whose server can say what it spent.
// Optional: a Target without it reports no costs.
type Meter interface {
	// Sample reads the server's counters now. Either field may be unknown
	// (negative): a remote server's processes cannot be read from here.
	Sample(ctx context.Context) (Sample, error)
}

// Sample is a server's cumulative counters at one instant.
type Sample struct {
	// CPU is the user+system time of every process of the server so far
	// (PostgreSQL: the postmaster and all its children, exited ones
	// included; MariaDB: the mysqld process, all its threads). Negative
	// when unknown.
	CPU time.Duration
	// Log is the log's position in bytes (PostgreSQL: pg_current_wal_lsn;
	// InnoDB: Innodb_lsn_current). Negative when unknown.
	Log int64
}

// Cost is what each hold of a measured window cost on average. A zero
// field is unknown (not measured, or nothing was held).
type Cost struct {
	// ServerCPUus is the server's CPU µs per hold: every process of the
	// server, so it includes the WAL writer, checkpointer, autovacuum and
	// the bench's own sampling queries, not only the backends serving the
	// holds.
	ServerCPUus float64 `json:"server_cpu_us_per_hold,omitempty"`
	// GoCPUus is this process's CPU µs per hold (getrusage): the engine,
	// the driver, and also the load generator's clients, the bench's
	// samplers and the Go runtime (GC); everything in the process.
	GoCPUus float64 `json:"go_cpu_us_per_hold,omitempty"`
	// LogBytes is the write-ahead (PostgreSQL) or redo (InnoDB) log bytes
	// per hold, full-page images after the run's checkpoint included.
	LogBytes float64 `json:"log_bytes_per_hold,omitempty"`
}

// Probe measures a Cost between StartProbe and Stop.
type Probe struct {
	m          Meter
	at, end    Sample
	self, used time.Duration
}

// StartProbe starts measuring; m may be nil (then only Go CPU is known).
func StartProbe(ctx context.Context, m Meter) *Probe {
	p := &Probe{m: m, self: selfCPU(), at: Sample{CPU: -1, Log: -1}, end: Sample{CPU: -1, Log: -1}}
	if m != nil {
		if s, err := m.Sample(ctx); err == nil {
			p.at = s
		}
	}
	return p
}

// Stop ends the measurement.
func (p *Probe) Stop(ctx context.Context) {
	p.used = selfCPU() - p.self
	if p.m != nil && (p.at.CPU >= 0 || p.at.Log >= 0) {
		if s, err := p.m.Sample(ctx); err == nil {
			p.end = s
		}
	}
}

// Cost divides what was measured between StartProbe and Stop by holds.
// A nil Probe costs nothing known.
func (p *Probe) Cost(holds int64) Cost {
	var c Cost
	if p == nil || holds <= 0 {
		return c
	}
	n := float64(holds)
	per := func(v float64) float64 { return math.Round(v/n*10) / 10 }
	if p.used > 0 {
		c.GoCPUus = per(float64(p.used) / 1e3)
	}
	if p.at.CPU >= 0 && p.end.CPU >= p.at.CPU {
		c.ServerCPUus = per(float64(p.end.CPU-p.at.CPU) / 1e3)
	}
	if p.at.Log >= 0 && p.end.Log >= p.at.Log {
		c.LogBytes = per(float64(p.end.Log - p.at.Log))
	}
	return c
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
