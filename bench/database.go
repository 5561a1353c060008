package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/postgres/migrations"
)

// server creates and drops the bench's databases on one PostgreSQL server:
// a migrated base template, one stocked template per (strategy, key set),
// and a fresh copy of that template for every run, so dead tuples and holds
// of one run never skew the next.
type server struct {
	url    string // any database on the server; its role needs CREATEDB
	prefix string
	seq    int
	made   []string // databases to drop at close, newest last
}

func newServer(u string) *server {
	return &server{url: u, prefix: fmt.Sprintf("hfbench_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)}
}

func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// name returns a new database name with the bench's prefix.
func (s *server) name(parts ...string) string {
	s.seq++
	n := fmt.Sprintf("%s_%d", s.prefix, s.seq)
	for _, p := range parts {
		n += "_" + strings.NewReplacer("-", "_").Replace(p)
	}
	return n
}

// create makes database name, a copy of template when not empty.
func (s *server) create(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + name
	if template != "" {
		sql += " TEMPLATE " + template
	}
	if err := s.exec(ctx, sql); err != nil {
		return fmt.Errorf("bench: create database %s (the role needs CREATEDB): %w", name, err)
	}
	s.made = append(s.made, name)
	return nil
}

func (s *server) drop(ctx context.Context, name string) error {
	for i, n := range s.made {
		if n == name {
			s.made = append(s.made[:i], s.made[i+1:]...)
			break
		}
	}
	return s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// close drops every database the bench made and still has.
func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(s.made) - 1; i >= 0; i-- {
		_ = s.exec(ctx, "DROP DATABASE IF EXISTS "+s.made[i]+" WITH (FORCE)")
	}
	s.made = nil
}

// base creates the migrated base template.
func (s *server) base(ctx context.Context) (string, error) {
	name := s.name("base")
	if err := s.create(ctx, name, ""); err != nil {
		return "", err
	}
	pool, err := s.pool(ctx, name, 2, "holdfast-bench-migrate")
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return "", err
	}
	return name, nil
}

// checkpoint asks for a checkpoint so one run's dirty pages are not written
// during the next; roles without the right skip it.
func (s *server) checkpoint(ctx context.Context) {
	_ = s.exec(ctx, "CHECKPOINT")
}

// pool opens a pool on database name with maxConns connections.
func (s *server) pool(ctx context.Context, name string, maxConns int, appName string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(withDatabase(s.url, name))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(maxConns)
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	// The audit's whole-database queries on fresh, unanalysed tables are
	// costed high enough to be JIT-compiled, which takes seconds; no OLTP
	// statement here is ever costed that high.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	return pgxpool.NewWithConfig(ctx, cfg)
}

// withDatabase returns the connection string u pointing at database db.
func withDatabase(u, db string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return u + " dbname=" + db // keyword/value form
	}
	p.Path = "/" + db
	return p.String()
}
