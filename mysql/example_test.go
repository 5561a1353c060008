package mysql_test

import (
	"context"
	"log"
	"os"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
)

// The application's order row and the claim commit together: the claim
// runs in the application's own READ COMMITTED transaction.
func ExampleClient_ClaimTx() {
	ctx := context.Background()
	c, err := mysql.Open(os.Getenv("DATABASE_URL"), 20, holdfast.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := migrations.Up(ctx, c.DB()); err != nil {
		log.Fatal(err)
	}
	checkout := uuid.New()
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: checkout,
		Lines: []holdfast.Line{{ItemID: 42, LocationID: 1, Quantity: 2}}}); err != nil {
		log.Fatal(err) // *holdfast.InsufficientStockError names the short lines
	}
	// … payment …
	tx, err := c.DB().BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (checkout_id) VALUES (?)", checkout[:]); err != nil {
		log.Fatal(err)
	}
	if _, err := c.ClaimTx(ctx, tx, 1, checkout); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
}
