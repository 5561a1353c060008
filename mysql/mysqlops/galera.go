package mysqlops

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/holdfast/holdfast/health"
)

// GaleraSizeMin is the smallest Galera cluster the doctor accepts without a
// warning: with three nodes, losing one leaves a majority that keeps the
// primary component (and holdfast writing).
const GaleraSizeMin = 3

// checkGalera grades what holdfast requires of a MariaDB Galera node
// (docs/OPERATIONS.md, "MariaDB: high availability"): nothing on a server
// without wsrep. Hooked into Doctor's checks (doctor.go).
//
//   - galera.component: the node is ready, Synced, in the primary
//     component, not desynced and accepting queries: else holdfast's
//     multi-host connector does not write to it (critical when it is the
//     node the doctor reached through holdfast's URL: no writer).
//   - galera.size: fewer than GaleraSizeMin nodes in the component.
//   - galera.durability: innodb_flush_log_at_trx_commit must be 1: with a
//     relaxed flush, nodes that crash close together lose acknowledged
//     commits (Jepsen 2026 saw it with Galera's recommended settings).
//   - galera.quorum: pc.ignore_sb or pc.ignore_quorum lets a minority keep
//     writing: split brain, two writers.
//   - galera.writers: certification failures or brute-force aborts on this
//     node mean another node took conflicting writes while this one did:
//     holdfast was (or something else is) writing through two nodes, where
//     row locks do not exclude each other (SKIP LOCKED takes a row another
//     node holds). holdfast's connector writes through one node; a few are
//     expected around a failover, when the old writer's last transactions
//     meet the new writer's.
//   - galera.settings: binlog_format ROW and innodb_autoinc_lock_mode 2,
//     which Galera itself requires.
func (d *doctor) checkGalera(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, statement("galera_status"))
	if err != nil {
		return err
	}
	defer rows.Close()
	v := map[string]string{}
	for rows.Next() {
		var k, val string
		if err := rows.Scan(&k, &val); err != nil {
			return err
		}
		v[k] = val
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if v["wsrep_on"] != "ON" {
		return nil
	}
	state, status := v["wsrep_local_state_comment"], v["wsrep_cluster_status"]
	if v["wsrep_ready"] != "ON" || status != "Primary" || state != "Synced" || v["wsrep_reject_queries"] != "NONE" {
		d.add("galera.component", health.SeverityCritical,
			fmt.Sprintf("this Galera node is not writable for holdfast: ready %s, %s, %s, reject_queries %s", v["wsrep_ready"], status, state, v["wsrep_reject_queries"]),
			"holdfast writes only to a node that is Synced in the primary component; this is the node holdfast's URL led to, so no node of the URL is writable now, or the URL names a single node",
			"name every node in DATABASE_URL (mysql://user:pw@db1:3306,db2:3306,db3:3306/holdfast) and restore a primary component (SHOW STATUS LIKE 'wsrep_%' on each node)")
	} else {
		d.add("galera.component", health.SeverityOK, "Galera node Synced in the primary component", "", "")
	}
	if n, err := strconv.Atoi(v["wsrep_cluster_size"]); err == nil && n < GaleraSizeMin {
		d.add("galera.size", health.SeverityWarn,
			fmt.Sprintf("the primary component has %d node(s); holdfast recommends at least %d", n, GaleraSizeMin),
			"losing one more node leaves no majority: the cluster stops taking writes",
			"bring the missing nodes back (they rejoin by IST or SST)")
	}
	if f := v["innodb_flush_log_at_trx_commit"]; f != "1" {
		d.add("galera.durability", health.SeverityCritical,
			fmt.Sprintf("innodb_flush_log_at_trx_commit is %s on a Galera node; holdfast requires 1", f),
			"a commit acknowledged to holdfast is then only in memory on every node: nodes crashing close together (a power cut, a kernel panic) lose acknowledged holds and claims (Jepsen 2026 found Galera losing commits with its recommended settings)",
			"SET GLOBAL innodb_flush_log_at_trx_commit = 1, and the same in every node's configuration")
	}
	opts := strings.ReplaceAll(strings.ToLower(v["wsrep_provider_options"]), " ", "")
	if strings.Contains(opts, "pc.ignore_sb=true") || strings.Contains(opts, "pc.ignore_quorum=true") {
		d.add("galera.quorum", health.SeverityCritical,
			"pc.ignore_sb or pc.ignore_quorum is set: a minority of nodes keeps accepting writes",
			"after a network split both sides take writes: two writers, holds granted twice, oversell",
			"remove pc.ignore_sb and pc.ignore_quorum from wsrep_provider_options")
	}
	cert, _ := strconv.ParseInt(v["wsrep_local_cert_failures"], 10, 64)
	bf, _ := strconv.ParseInt(v["wsrep_local_bf_aborts"], 10, 64)
	if cert+bf > 0 {
		d.add("galera.writers", health.SeverityWarn,
			fmt.Sprintf("%d certification failures and %d brute-force aborts on this node since it started: writes conflicted with writes made through another node", cert, bf),
			"holdfast requires a single writer node: Galera's row locks are local to a node, so reservations through two nodes do not exclude each other (a few are expected around a failover, when the old writer's last transactions meet the new writer's)",
			"give every holdfast process and every application writing holdfast's tables the same multi-host DATABASE_URL, in the same order; no load balancer spreading writes over nodes")
	} else {
		d.add("galera.writers", health.SeverityOK, "no writes through another node conflicted with this node's", "", "")
	}
	if b := v["binlog_format"]; b != "" && b != "ROW" {
		d.add("galera.settings", health.SeverityWarn, "binlog_format is "+b+"; Galera requires ROW", "", "SET GLOBAL binlog_format = ROW in every node's configuration")
	}
	if a := v["innodb_autoinc_lock_mode"]; a != "" && a != "2" {
		d.add("galera.settings", health.SeverityWarn, "innodb_autoinc_lock_mode is "+a+"; Galera requires 2", "", "innodb_autoinc_lock_mode = 2 in every node's configuration (not dynamic)")
	}
	return nil
}
