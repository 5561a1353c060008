package driver

// ShopMover is the optional part of a Classifier for a database with a
// placement guard (issue #28, a shop moving between pods): ShopMoved
// reports the database's refusal of a write of a shop it does not serve
// now — fenced for a move, arriving, or moved away. Nothing was applied;
// the engine answers holdfast.ErrShopMoved and does not retry in place.
type ShopMover interface {
	ShopMoved(err error) bool
}
