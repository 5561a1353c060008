package postgres_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// A checkout: hold the cart when payment starts, then claim it in the same
// transaction as the order row when payment succeeds (or release it).
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/shop") // migrated with migrate.Up
	if err != nil {
		panic(err)
	}
	hf, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		panic(err)
	}
	hf.Start(ctx) // sweeper and replenisher
	defer hf.Stop(ctx)

	checkout := uuid.New()
	_, err = hf.Reserve(ctx, holdfast.ReserveParams{
		ShopID: 1, CheckoutID: checkout,
		Lines: []holdfast.Line{{ItemID: 42, LocationID: 7, Quantity: 2}},
	})
	var short *holdfast.InsufficientStockError
	switch {
	case errors.As(err, &short):
		fmt.Println("sold out:", short.Lines)
		return
	case err != nil:
		panic(err)
	}

	paid := true // the payment provider's answer, with no transaction open
	if !paid {
		_, _ = hf.Release(ctx, 1, checkout)
		return
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := hf.ClaimTx(ctx, tx, 1, checkout); err != nil {
			return err // ErrHoldExpired with a shortfall: refund
		}
		_, err := tx.Exec(ctx, "INSERT INTO orders (checkout_id) VALUES ($1)", checkout)
		return err
	})
	if err != nil {
		panic(err)
	}
}
