package driver

import (
	"sync"
	"sync/atomic"

	"github.com/holdfast/holdfast"
)

// DeepKeys remembers the batch keys a client's last batch of them saw
// deep, holding at least Depth units, bounded by Max keys (past it, other
// keys count as shallow, which is always safe: one batch of the key at a
// time); and the client's running batches of each key (at most the
// engine's CombineBatchMax × CombineRunnersMax keys). A driver lets two
// batches of a deep key run at once (Reserver.CombineOverlap): PostgreSQL
// gives each its own counter row, MySQL lets each take its key's units
// last (their combine.go). Correctness never depends on it. Safe for
// concurrent use; Depth and Max are set before.
type DeepKeys struct {
	Depth int   // units at which a key is deep
	Max   int64 // keys remembered at most

	m sync.Map // holdfast.Key -> struct{}
	n atomic.Int64

	mu      sync.Mutex
	running map[holdfast.Key]int // the client's running batches of each key
}

// Enter counts a running batch of k and reports whether it is the only
// one; every Enter is followed by a Leave.
func (d *DeepKeys) Enter(k holdfast.Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running == nil {
		d.running = make(map[holdfast.Key]int)
	}
	d.running[k]++
	return d.running[k] == 1
}

// Leave ends a batch of k that Enter counted.
func (d *DeepKeys) Leave(k holdfast.Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[k]--; d.running[k] <= 0 {
		delete(d.running, k)
	}
}

// Deep reports whether the client's last batch of k saw it deep.
func (d *DeepKeys) Deep(k holdfast.Key) bool {
	_, ok := d.m.Load(k)
	return ok
}

// Note records the units a batch saw on all of k's counter rows.
func (d *DeepKeys) Note(k holdfast.Key, units int) {
	if units < d.Depth {
		if _, ok := d.m.LoadAndDelete(k); ok {
			d.n.Add(-1)
		}
		return
	}
	if d.n.Load() >= d.Max {
		return
	}
	if _, loaded := d.m.LoadOrStore(k, struct{}{}); !loaded {
		d.n.Add(1)
	}
}
