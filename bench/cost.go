package bench

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/bench/hotbench"
)

// pgMeter reads what a PostgreSQL server spent: the CPU time of the
// postmaster and all its children (when the server runs on this machine
// and the role may read data_directory) and the WAL position. It keeps
// one connection, so that sampling does not start a backend each time.
// Safe for concurrent use.
type pgMeter struct {
	url string

	mu    sync.Mutex
	conn  *pgx.Conn
	tried bool // pid looked up
	pid   int  // the postmaster's; 0 unknown
}

var _ hotbench.Meter = (*pgMeter)(nil)

// serverNames are the command names of PostgreSQL's postmaster.
var serverNames = []string{"postgres", "postmaster"}

func (m *pgMeter) Sample(ctx context.Context) (hotbench.Sample, error) {
	s := hotbench.Sample{CPU: -1, Log: -1}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil || m.conn.IsClosed() {
		c, err := pgx.Connect(ctx, m.url)
		if err != nil {
			return s, err
		}
		m.conn = c
	}
	if !m.tried {
		m.tried = true
		var dir string
		if m.conn.QueryRow(ctx, query("data_directory")).Scan(&dir) == nil {
			m.pid, _ = hotbench.PIDFile(filepath.Join(dir, "postmaster.pid"))
		}
	}
	if m.pid > 0 {
		if cpu, err := hotbench.ServerCPU(m.pid, serverNames, true); err == nil {
			s.CPU = cpu
		}
	}
	var lsn int64
	if err := m.conn.QueryRow(ctx, query("wal_lsn")).Scan(&lsn); err == nil {
		s.Log = lsn
	}
	return s, nil
}

func (m *pgMeter) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil {
		_ = m.conn.Close(context.Background())
		m.conn = nil
	}
}
