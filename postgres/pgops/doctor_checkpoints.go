package pgops

import (
	"context"
	"fmt"

	"github.com/holdfast/holdfast/health"
)

// CheckpointsJudgedMin is the fewest checkpoints the doctor judges their
// causes by; with fewer since the statistics were reset it says so.
const CheckpointsJudgedMin = 4

// checkpointStats is one row of checkpoints.sql.
type checkpointStats struct {
	timed, requested                              int64
	walBytes, maxWALBytes                         int64 // WAL written since the WAL statistics' reset; max_wal_size
	since, maxWAL, timeout, fullPages, compressed string
}

// checkpoints (check setting.checkpoints): whether checkpoints come on
// schedule or are forced by WAL volume. After each checkpoint the first
// change to every page writes the whole page to WAL (full_page_writes); when
// max_wal_size is small for the write rate, checkpoints follow each other
// as fast as WAL fills, most WAL is page images, and the more pages the
// tables span the worse it gets: the service soak of docs/PERFORMANCE.md
// wrote 47 MB/s of WAL, about nine tenths of it page images, with a
// checkpoint every 20 s, and its throughput fell as the tables grew.
func (d *doctor) checkpoints(ctx context.Context) error {
	var version int
	if err := d.pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return err
	}
	stmt := "checkpoints"
	if version >= 170000 {
		stmt = "checkpoints_17"
	}
	var s checkpointStats
	if err := d.pool.QueryRow(ctx, statement(stmt)).Scan(&s.timed, &s.requested, &s.since, &s.maxWAL, &s.timeout, &s.fullPages, &s.compressed, &s.walBytes, &s.maxWALBytes); err != nil {
		return err
	}
	sev, msg := s.judge()
	if sev == health.SeverityOK {
		d.add("setting.checkpoints", sev, msg, "", "")
		return nil
	}
	d.add("setting.checkpoints", sev, msg,
		"checkpoints come as fast as WAL reaches max_wal_size (or CHECKPOINT commands ask for them); after each one the first change to every page writes the whole page to WAL, so under a steady reservation load most WAL is page images and the write rate falls as the tables grow (docs/PERFORMANCE.md, service soak: 47 MB/s of WAL, a checkpoint every 20 s)",
		"size max_wal_size to the WAL one checkpoint_timeout writes, e.g. ALTER SYSTEM SET max_wal_size = '8GB'; ALTER SYSTEM SET checkpoint_timeout = '15min'; ALTER SYSTEM SET wal_compression = on; SELECT pg_reload_conf(); (then watch this check over the next checkpoints)")
	return nil
}

// forcedMax is the most requested checkpoints WAL volume can have forced:
// one comes when WAL since the last reaches max_wal_size / (1 +
// checkpoint_completion_target), at least half of max_wal_size. Every
// other requested checkpoint is a shutdown (each command that stops the
// embedded cluster), the end of crash recovery, a CHECKPOINT command or a
// base backup: not what this check is about.
func (s checkpointStats) forcedMax() int64 {
	if s.maxWALBytes <= 0 {
		return s.requested
	}
	return min(s.requested, s.walBytes/(s.maxWALBytes/2))
}

// judge is the finding: a warning when more checkpoints could have been
// forced by WAL volume than came on schedule, once there are enough to
// judge and page images are written at all. Requested checkpoints the WAL
// written cannot account for (shutdowns and restarts) are not counted.
func (s checkpointStats) judge() (health.Severity, string) {
	since := s.since
	if since == "" {
		since = "the server started"
	}
	settings := fmt.Sprintf("max_wal_size = %s, checkpoint_timeout = %s, wal_compression = %s", s.maxWAL, s.timeout, s.compressed)
	total := s.timed + s.requested
	switch {
	case s.fullPages != "on":
		return health.SeverityOK, fmt.Sprintf("full_page_writes = %s: checkpoints write no page images (%d on schedule, %d requested since %s)", s.fullPages, s.timed, s.requested, since)
	case total < CheckpointsJudgedMin:
		return health.SeverityOK, fmt.Sprintf("%d checkpoints since %s: too few to judge (%s)", total, since, settings)
	case s.forcedMax() > s.timed:
		return health.SeverityWarn, fmt.Sprintf("%d of %d checkpoints since %s were requested, not on schedule (%s)", s.requested, total, since, settings)
	case s.requested > s.timed:
		return health.SeverityOK, fmt.Sprintf("%d of %d checkpoints since %s were requested, but only %s of WAL was written, less than max_wal_size/2 per checkpoint: shutdowns and restarts (each command that stops the embedded cluster), not WAL volume (%s)", s.requested, total, since, walSize(s.walBytes), settings)
	}
	return health.SeverityOK, fmt.Sprintf("%d of %d checkpoints since %s on schedule (%s)", s.timed, total, since, settings)
}

// walSize is a WAL volume for a message.
func walSize(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d kB", b>>10)
}
