package main

import (
	"context"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestWebhooksAddRefusedURL: a destination the network rules refuse is one
// line naming webhooks add's own --webhook-allow-networks, without a
// doubled "holdfast:" prefix or a pointer to serve.
func TestWebhooksAddRefusedURL(t *testing.T) {
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx) //nolint:errcheck
	t.Setenv("DATABASE_URL", c.URL("postgres"))
	if code, out, errOut := run(t, "migrate"); code != 0 {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, "webhooks", "add", "--shop", "1", "--url", "http://127.0.0.1:9/x")
	msg := strings.TrimSpace(errOut)
	if code != 1 || out != "" || strings.Contains(msg, "\n") || strings.Count(msg, "holdfast") != 1 ||
		!strings.Contains(msg, "--url: loopback address 127.0.0.1 is not allowed; webhooks add --webhook-allow-networks") ||
		strings.Contains(msg, "holdfast serve --webhook-allow-networks") || strings.Contains(msg, "holdfast: invalid") {
		t.Errorf("webhooks add of a loopback URL: exit %d, stdout %q, stderr %q; want 1 and one line naming webhooks add --webhook-allow-networks", code, out, errOut)
	}
	if code, _, errOut := run(t, "webhooks", "add", "--shop", "1", "--url", "http://127.0.0.1:9/x", "--webhook-allow-networks", "127.0.0.0/8"); code != 0 {
		t.Errorf("webhooks add with the network allowed: exit %d %q", code, errOut)
	}
}
