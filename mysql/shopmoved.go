package mysql

// sqlstateShopFenced is what the placement guard of migration 15 (the
// <table>_guard_i/u/d triggers) signals for a write of a shop that is
// fenced for a move, arriving, or gone from this pod: the statement is
// rolled back, and the engine rolls back its own transaction (a caller's
// transaction is left to the caller, its savepoint rolled back).
const sqlstateShopFenced = "HF001"

// shopMoved reports the placement guard's refusal.
func shopMoved(err error) bool { return sqlState(err) == sqlstateShopFenced }

// ShopMoved reports the placement guard's refusal (engine/driver.ShopMover):
// the engine answers it holdfast.ErrShopMoved.
func (classifier) ShopMoved(err error) bool { return shopMoved(err) }

// ShopMoved implements engine/driver.ShopMover.
func (d *engineDriver) ShopMoved(err error) bool { return shopMoved(err) }
