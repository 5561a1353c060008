package pgops

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/health"
)

// ReadSafetyStock reads the keys with a safety stock, listing at most n of
// those at or below it.
func ReadSafetyStock(ctx context.Context, q Querier, n int) (*health.SafetyStock, error) {
	s := &health.SafetyStock{}
	if err := q.QueryRow(ctx, statement("safety_stock")).Scan(&s.Keys, &s.Units, &s.AtSafety, &s.Below); err != nil {
		return nil, fmt.Errorf("ops: read safety stock: %w", err)
	}
	rows, err := q.Query(ctx, statement("safety_keys"), n)
	if err != nil {
		return nil, fmt.Errorf("ops: read safety stock keys: %w", err)
	}
	s.Tightest, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (health.SafetyKey, error) {
		var k health.SafetyKey
		err := row.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &k.Available, &k.Safety, &k.Held)
		return k, err
	})
	return s, err
}

func (d *doctor) safety(ctx context.Context) error {
	s, err := ReadSafetyStock(ctx, d.pool, 10)
	if err != nil {
		return err
	}
	d.findings = append(d.findings, health.SafetyFindings(s)...)
	return nil
}
