package pgops

import (
	"strings"
	"testing"

	"github.com/holdfast/holdfast/health"
)

// TestCheckpointsJudge: requested checkpoints outnumbering scheduled ones
// warn, once there are enough and page images are written at all.
func TestCheckpointsJudge(t *testing.T) {
	base := checkpointStats{since: "2026-12-01 06:17:37+00", maxWAL: "1GB", timeout: "5min", fullPages: "on", compressed: "off",
		maxWALBytes: 1 << 30, walBytes: 200 << 30}
	for _, c := range []struct {
		name             string
		timed, requested int64
		fullPages        string
		want             health.Severity
		say              string
	}{
		{"the soak's server", 0, 170, "on", health.SeverityWarn, "170 of 170 checkpoints since 2026-12-01 06:17:37+00 were requested"},
		{"more requested", 4, 5, "on", health.SeverityWarn, "5 of 9"},
		{"on schedule", 12, 1, "on", health.SeverityOK, "12 of 13 checkpoints"},
		{"as many each", 5, 5, "on", health.SeverityOK, "5 of 10"},
		{"too few", 0, 3, "on", health.SeverityOK, "too few to judge"},
		{"no page images", 0, 170, "off", health.SeverityOK, "full_page_writes = off"},
		// A fresh embedded cluster each CLI command starts and stops: every
		// shutdown checkpoint counts as requested, with little WAL written.
		{"restarts, little WAL", 0, 4, "on", health.SeverityOK, "shutdowns and restarts"},
		{"some forced, more restarts", 3, 8, "on", health.SeverityOK, "shutdowns and restarts"},
	} {
		s := base
		s.timed, s.requested, s.fullPages = c.timed, c.requested, c.fullPages
		switch c.name {
		case "restarts, little WAL":
			s.walBytes = 30 << 20
		case "some forced, more restarts":
			s.walBytes = 1536 << 20 // three forced at most
		}
		sev, msg := s.judge()
		if sev != c.want || !strings.Contains(msg, c.say) {
			t.Errorf("%s: %v %q, want %v and %q", c.name, sev, msg, c.want, c.say)
		}
		if sev == health.SeverityWarn && !strings.Contains(msg, "max_wal_size = 1GB") {
			t.Errorf("%s: %q does not name max_wal_size", c.name, msg)
		}
	}
}
