package mysqlops

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/holdfast/holdfast/health"
)

// ReadSafetyStock reads the keys with a safety stock from a holdfast MySQL
// database, listing at most n of those at or below it (health.SafetyStock).
func ReadSafetyStock(ctx context.Context, db *sql.DB, n int) (*health.SafetyStock, error) {
	s := &health.SafetyStock{}
	if err := db.QueryRowContext(ctx, statement("safety_stock")).Scan(&s.Keys, &s.Units, &s.AtSafety, &s.Below); err != nil {
		return nil, fmt.Errorf("mysqlops: read safety stock: %w", err)
	}
	rows, err := db.QueryContext(ctx, statement("safety_keys"), n)
	if err != nil {
		return nil, fmt.Errorf("mysqlops: read safety stock keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k health.SafetyKey
		if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &k.Available, &k.Safety, &k.Held); err != nil {
			return nil, err
		}
		s.Tightest = append(s.Tightest, k)
	}
	return s, rows.Err()
}

// checkSafety adds the safety-stock findings (health.SafetyFindings).
func (d *doctor) checkSafety(ctx context.Context) error {
	s, err := ReadSafetyStock(ctx, d.db, 10)
	if err != nil {
		return err
	}
	d.findings = append(d.findings, health.SafetyFindings(s)...)
	return nil
}
