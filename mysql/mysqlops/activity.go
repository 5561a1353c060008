package mysqlops

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/internal/sqltext"
)

// CallerOf names the caller of a statement from its leading comment tag:
// "app/route" (or whichever of the two is present), "untagged" when the
// statement carries none, "" for no statement.
func CallerOf(query string) string {
	q := strings.TrimSpace(query)
	if q == "" {
		return ""
	}
	// Only the leading comment (/* app='holdfast',route='reserve' */, read
	// by sqltext.Parse) names the caller here.
	if !sqltext.Leading(q) {
		return "untagged"
	}
	c := sqltext.Parse(q)
	switch app, route := c.App, c.Route; {
	case app != "" && route != "":
		return app + "/" + route
	case app != "":
		return app
	case route != "":
		return route
	}
	return "untagged"
}

// CallerSeconds is one caller's connection-seconds over a sampling window:
// the time connections spent running its statements (or, for "idle",
// connected and doing nothing).
type CallerSeconds struct {
	Caller  string
	Seconds float64
}

// ConnectionSeconds samples the process list samples times, interval
// apart, and attributes each connection's interval to the caller named by
// the comment tag of the statement it is running; connections in Sleep count
// as "idle". Sorted by seconds, most first. Each sample reads at most
// ConnectionsMax connections.
func ConnectionSeconds(ctx context.Context, db *sql.DB, samples int, interval time.Duration) ([]CallerSeconds, error) {
	by := map[string]float64{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := range samples {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := sampleOnce(ctx, db, interval, by); err != nil {
			return nil, err
		}
	}
	out := make([]CallerSeconds, 0, len(by))
	for c, s := range by {
		out = append(out, CallerSeconds{Caller: c, Seconds: s})
	}
	sortCallers(out)
	return out, nil
}

// sortCallers sorts by seconds, most first, then by caller.
func sortCallers(out []CallerSeconds) {
	slices.SortFunc(out, func(a, b CallerSeconds) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), strings.Compare(a.Caller, b.Caller))
	})
}

func sampleOnce(ctx context.Context, db *sql.DB, interval time.Duration, by map[string]float64) error {
	rows, err := db.QueryContext(ctx, statement("processlist"), ConnectionsMax)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var user, command, info string
		if err := rows.Scan(&id, &user, &command, &info); err != nil {
			return err
		}
		caller := CallerOf(info)
		if command == "Sleep" || caller == "" {
			caller = "idle"
		}
		by[caller] += interval.Seconds()
	}
	return rows.Err()
}

func (d *doctor) checkConnections(ctx context.Context) error {
	cs, err := ConnectionSeconds(ctx, d.db, d.cfg.Samples, d.cfg.SampleInterval)
	if err != nil {
		return err
	}
	window := time.Duration(d.cfg.Samples) * d.cfg.SampleInterval
	parts := make([]string, 0, len(cs))
	for i, c := range cs {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("… %d more", len(cs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", c.Caller, c.Seconds))
	}
	if len(parts) == 0 {
		parts = append(parts, "no other connections")
	}
	d.add("connections.by_caller", health.SeverityOK,
		fmt.Sprintf("connection-seconds by caller over %v: %s", window, strings.Join(parts, ", ")), "", "")
	return nil
}
