package acklog_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/acklog"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestCheck: answers that match the database are neither lost nor doubled;
// an acknowledged hold missing, one in another state, a hold no buyer was
// told of and a claim of a checkout told released are each found.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	eng, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	key := holdfast.Key{ShopID: 7, ItemID: 1, LocationID: 1}
	stock := 10
	if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &stock, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	reserve := func() uuid.UUID {
		t.Helper()
		id := uuid.New()
		if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: key.ShopID, CheckoutID: id, TTL: time.Minute,
			Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	l := &acklog.Log{}
	held, claimed, released := reserve(), reserve(), reserve()
	if _, err := eng.Claim(ctx, key.ShopID, claimed); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Release(ctx, key.ShopID, released); err != nil {
		t.Fatal(err)
	}
	l.Ack(held, holdfast.StatusExpired) // left to expire: still held is right
	l.Ack(claimed, holdfast.StatusClaimed)
	l.Ack(released, holdfast.StatusReleased)
	l.Unknown(uuid.New())
	r, err := acklog.Check(ctx, eng, key, stock, l)
	if err != nil {
		t.Fatal(err)
	}
	if r.Acked != 3 || r.Unknown != 1 || r.Lost != 0 || r.Twice != 0 || r.Claimed != 1 || r.Available != 9 {
		t.Fatalf("matching answers: %+v", r)
	}

	l.Ack(uuid.New(), holdfast.StatusHeld) // told held, never in the database
	told := reserve()                      // a hold nobody was told of
	wrong := reserve()                     // claimed, told released
	if _, err := eng.Claim(ctx, key.ShopID, wrong); err != nil {
		t.Fatal(err)
	}
	l.Ack(wrong, holdfast.StatusReleased)
	r, err = acklog.Check(ctx, eng, key, stock, l)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost != 2 || r.Twice != 2 || r.Claimed != 2 {
		t.Fatalf("lost %d (want 2: missing, claimed though told released), twice %d (want 2: hold %s untold, claim of %s told released), claimed %d: %v",
			r.Lost, r.Twice, told, wrong, r.Claimed, r.Problems)
	}
	t.Log(r.Problems)
}
