package holdfast

// Safety stock (issue #16 item 4): a per-key quantity withheld from sale.
// Sellable is available - safety - held; buffers (pool rows, counters) never
// hold units that would eat into it, so every strategy, the combiner and
// the replenisher respect it without knowing it. Claims and stock changes
// behave as before: a claim deducts its hold from available, a stock change
// moves available (and shrinks the buffer to fit the safety stock too).
//
// Raising the safety stock above what is free (available - held) is
// allowed, like a stock reduction below the active holds: the buffer is
// emptied, nothing more is sold, and every hold stays claimable (holds are
// backed by available, which the safety stock does not reduce). CheckInvariant
// keeps checking pooled + held <= available, and also that a non-empty
// buffer never reaches into the safety stock: pooled + held <= available -
// safety whenever pooled > 0.

// SafetyRespected reports whether a key's buffer stays out of its safety
// stock: an empty buffer, or pooled + held <= available - safety.
// CheckInvariant on every engine counts a key that fails it as a violation.
func SafetyRespected(a KeyAccount) bool {
	return a.Safety == 0 || a.Pooled == 0 || a.Pooled+a.Held <= a.Available-a.Safety
}
