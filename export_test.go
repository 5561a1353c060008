package holdfast

// BuyerLockKey is buyerLockKey, for tests that hold a buyer's lock to stall
// a reservation after its hold row (inflight_test.go).
var BuyerLockKey = buyerLockKey
