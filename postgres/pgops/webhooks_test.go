package pgops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/webhook"
)

// TestDoctorWebhookDeadLetters: dead letters are a warning that says how
// many and on how many endpoints; none is OK.
func TestDoctorWebhookDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if f := one(t, doctor(t, db.Pool, pgops.DoctorConfig{Engine: c}), "webhooks.dead_letters"); f.Severity != health.SeverityOK {
		t.Fatalf("no dead letters: %+v", f)
	}
	ep, err := webhook.NewRegistry(pgstore.Webhooks(db.Pool)).Add(ctx, 1, "https://example.com/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	// An endpoint that gave up on two events (what the deliverer writes
	// past the horizon; its own test is in package webhook).
	for cur := 1; cur <= 2; cur++ {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO webhook_dead_letters (endpoint_id, shop_id, cursor, event, attempts, last_error)
			VALUES ($1, 1, $2, '{}', 9, 'answered 500')`, ep.ID, cur); err != nil {
			t.Fatal(err)
		}
	}
	f := one(t, doctor(t, db.Pool, pgops.DoctorConfig{Engine: c}), "webhooks.dead_letters")
	if f.Severity != health.SeverityWarn || !strings.Contains(f.Message, "2 webhook dead letters on 1 endpoints") || f.Action == "" {
		t.Fatalf("dead letters: %+v", f)
	}
}
