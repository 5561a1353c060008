package ops

import (
	"context"
	"fmt"
	"strings"
)

// The doctor's check of replication (replication.synchronous): under an HA
// manager (Patroni) holdfast's acknowledged holds survive a failover only
// when each commit waited for a synchronous standby (#27).

func (d *doctor) replication(ctx context.Context) error {
	var (
		standby         bool
		timeline        int
		ssn, syncCommit string
		senders, syncs  int
		hidden          int
		lagBytes        int64
		lagSeconds      float64
	)
	if err := d.pool.QueryRow(ctx, statement("replication")).Scan(&standby, &timeline, &ssn, &syncCommit,
		&senders, &syncs, &hidden, &lagBytes, &lagSeconds); err != nil {
		return err
	}
	const meaning = "a commit acknowledged before a synchronous standby has it is lost if the primary fails and a standby is promoted: holdfast would have acknowledged holds, claims and stock changes that no longer exist"
	if standby {
		d.add("replication.synchronous", SeverityCritical, fmt.Sprintf("the server is a standby (timeline %d): holdfast cannot write here", timeline),
			"DATABASE_URL reaches a standby, not the primary; every write fails with 25006 (read only)",
			"name every node in DATABASE_URL with target_session_attrs=read-write (see docs/OPERATIONS.md, PostgreSQL under Patroni)")
		return nil
	}
	picture := fmt.Sprintf("timeline %d, %d standbys streaming, %d synchronous (synchronous_standby_names %q, synchronous_commit %s), replay lag %d bytes / %.1fs",
		timeline, senders, syncs, ssn, syncCommit, lagBytes, lagSeconds)
	switch {
	case hidden > 0:
		d.add("replication.synchronous", SeverityWarn, fmt.Sprintf("%d standbys streaming, but this role cannot see whether they are synchronous (synchronous_standby_names %q, timeline %d)", senders, ssn, timeline),
			"pg_stat_replication shows a standby's state only to roles with pg_read_all_stats; whether acknowledged writes reached a synchronous standby was not examined",
			"GRANT pg_monitor TO <the doctor's role>, or run the doctor as a superuser")
	case senders == 0 && strings.TrimSpace(ssn) == "":
		d.add("replication.synchronous", SeverityOK, "a single server, no standby: "+picture, "", "")
	case syncs == 0 && strings.TrimSpace(ssn) != "":
		d.add("replication.synchronous", SeverityCritical, "synchronous replication is configured but no synchronous standby is connected: commits wait with no end (or, not in strict mode, are acknowledged by the primary alone); "+picture,
			meaning, "bring a standby back (patronictl list; the standby's log); holdfast answers such a commit outcome_unknown once its request times out")
	case syncs == 0:
		d.add("replication.synchronous", SeverityWarn, "writes are acknowledged without a synchronous standby: "+picture,
			meaning, "turn on synchronous replication: Patroni's synchronous_mode: true and synchronous_mode_strict: true (docs/OPERATIONS.md)")
	case syncCommit == "off" || syncCommit == "local":
		d.add("replication.synchronous", SeverityWarn, fmt.Sprintf("synchronous_commit is %s: writes are acknowledged before the synchronous standby has them; ", syncCommit)+picture,
			meaning, "set synchronous_commit to on (the default) or remote_apply for holdfast's role")
	default:
		d.add("replication.synchronous", SeverityOK, picture, "", "")
	}
	return nil
}
