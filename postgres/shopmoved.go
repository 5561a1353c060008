package postgres

// sqlstateShopFenced is what the placement guard of migration 15
// (holdfast_shop_guard) raises for a write of a shop that is fenced for a
// move, arriving, or gone from this pod: nothing of the statement's
// transaction (or savepoint) is applied.
const sqlstateShopFenced = "HF001"

// ShopMoved reports the placement guard's refusal (engine/driver.ShopMover):
// the engine answers it holdfast.ErrShopMoved.
func (classifier) ShopMoved(err error) bool { return SQLState(err) == sqlstateShopFenced }

// ShopMoved implements driver.ShopMover.
func (d *engineDriver) ShopMoved(err error) bool { return classifier{}.ShopMoved(err) }
