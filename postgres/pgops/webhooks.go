package pgops

import (
	"context"
	"fmt"

	"github.com/holdfast/holdfast/health"
)

var sqlWebhookDeadCount = statement("webhook_dead_count")

// webhooks reports dead letters: events a webhook endpoint did not accept
// within the delivery's retry horizon (package webhook).
func (d *doctor) webhooks(ctx context.Context) error {
	var letters, endpoints int64
	if err := d.pool.QueryRow(ctx, sqlWebhookDeadCount).Scan(&letters, &endpoints); err != nil {
		return err
	}
	if letters == 0 {
		d.add("webhooks.dead_letters", health.SeverityOK, "no webhook dead letters", "", "")
		return nil
	}
	d.add("webhooks.dead_letters", health.SeverityWarn,
		fmt.Sprintf("%d webhook dead letters on %d endpoints", letters, endpoints),
		"holdfast serve gave up delivering these events after the retry horizon: the receivers missed them",
		"fix the endpoints (holdfast webhooks list --shop N shows the last error), then replay the events from GET /v1/shops/{shop}/webhooks/dead-letters or the feed; remove an endpoint to drop its dead letters")
	return nil
}
