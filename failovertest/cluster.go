// Package failovertest runs holdfast through the database's failover: a
// highly available cluster (PostgreSQL under Patroni, MariaDB with one
// writer) loses its primary while clients reserve, claim, release and change
// stock through holdfast, and the history of every answer is checked.
//
// An HA harness (postgres/patroni, mysql/galera) implements Cluster; the
// runner in this package does the rest for either engine.
package failovertest

import (
	"context"
	"time"
)

// Kind is one way the primary (the node holdfast writes to) is lost.
type Kind string

const (
	// Kill is kill -9 of the primary's server process.
	Kill Kind = "kill"
	// Freeze is SIGSTOP of every process of the primary; the cluster must
	// fence it and promote another node. Heal thaws it.
	Freeze Kind = "freeze"
	// Switchover is a planned hand-over to another node.
	Switchover Kind = "switchover"
)

// Cluster is a private HA cluster on 127.0.0.1 started by a test.
type Cluster interface {
	// Engine names the holdfast engine the cluster serves ("postgres",
	// "mariadb").
	Engine() string
	// URL is what holdfast is given (DATABASE_URL): it names every node
	// holdfast may write to, or the one entry point for writes.
	URL() string
	// Kinds lists the faults this cluster supports.
	Kinds() []Kind
	// Primary names the node currently accepting writes.
	Primary(ctx context.Context) (string, error)
	// Inject loses the current primary in the given way and returns once
	// the fault is in place (not once the cluster has recovered); at is
	// when it took effect.
	Inject(ctx context.Context, k Kind) (at time.Time, err error)
	// Heal undoes what Inject left behind (restart a killed node, thaw a
	// frozen one) and returns once the cluster is whole again: a primary,
	// every node back as a replica, synchronous replication in place.
	Heal(ctx context.Context) error
	// Close stops every process and removes the cluster's files.
	Close(ctx context.Context) error
}
