package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/bench/hotbench"
)

// Scenario names.
const (
	ScenarioHot     = "hot"
	ScenarioHotTx   = "hot-tx"
	ScenarioSpread  = "spread"
	ScenarioCart    = "cart"
	ScenarioSoldout = "soldout"
	// ScenarioAvail reads the hot key's availability instead of reserving
	// it (hotbench.ScenarioAvail, issue #30 item 4): reads/s in the holds/s
	// column, and, when hot ran at the same clients and strategy, the
	// ratio of the two under the table. Engine strategies only; not in the
	// default set.
	ScenarioAvail = hotbench.ScenarioAvail
)

// Scenarios lists every scenario in the order the bench runs them.
func Scenarios() []string {
	return []string{ScenarioHot, ScenarioHotTx, ScenarioSpread, ScenarioCart, ScenarioSoldout}
}

// benchShop is the shop every scenario's keys belong to.
const benchShop = 1

// scenario is a workload: the keys it needs and the carts its clients send.
type scenario struct {
	name string
	// keySet names the stocked key set; scenarios with the same key set
	// share a template database.
	keySet string
	keys   []holdfast.Key
	units  int // stock per key
	// inTx: each reservation runs with ReserveTx inside a transaction that
	// then does Options.TxWork of simulated work before committing.
	inTx bool
	// lines returns the next cart.
	lines func(r *rand.Rand) []holdfast.Line
	// engineOnly: the baselines cannot run it (allocation scenarios).
	engineOnly bool
	// avail: availability reads of the hot key, run by hotbench (runAvail).
	avail bool
}

func keyRange(n int) []holdfast.Key {
	keys := make([]holdfast.Key, n)
	for i := range keys {
		keys[i] = holdfast.Key{ShopID: benchShop, ItemID: int64(i + 1), LocationID: 1}
	}
	return keys
}

func oneLine(item int64) []holdfast.Line {
	return []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 1}}
}

// newScenario builds the named scenario for o.
func newScenario(name string, o *Options) (*scenario, error) {
	if sc, ok := allocScenario(name, o); ok {
		return sc, nil
	}
	switch name {
	case ScenarioHot, ScenarioHotTx:
		return &scenario{
			name: name, keySet: "hot", keys: keyRange(1), units: o.HotStock, inTx: name == ScenarioHotTx,
			lines: func(*rand.Rand) []holdfast.Line { return oneLine(1) },
		}, nil
	case ScenarioSpread:
		n := o.SpreadKeys
		return &scenario{
			name: name, keySet: "spread", keys: keyRange(n), units: o.SpreadStock,
			lines: func(r *rand.Rand) []holdfast.Line { return oneLine(int64(1 + r.IntN(n))) },
		}, nil
	case ScenarioCart:
		n := o.CartKeys
		return &scenario{
			name: name, keySet: "cart", keys: keyRange(n), units: o.HotStock,
			lines: func(r *rand.Rand) []holdfast.Line {
				// 3 to 5 distinct hot keys, in random order.
				perm := r.Perm(n)[:min(n, 3+r.IntN(3))]
				lines := make([]holdfast.Line, len(perm))
				for i, p := range perm {
					lines[i] = holdfast.Line{ItemID: int64(p + 1), LocationID: 1, Quantity: 1}
				}
				return lines
			},
		}, nil
	case ScenarioAvail:
		return &scenario{
			name: name, keySet: "hot", keys: keyRange(1), units: o.HotStock, engineOnly: true, avail: true,
			lines: func(*rand.Rand) []holdfast.Line { return oneLine(1) },
		}, nil
	case ScenarioSoldout:
		return &scenario{
			name: name, keySet: "soldout", keys: keyRange(1), units: o.SoldoutUnits,
			lines: func(*rand.Rand) []holdfast.Line { return oneLine(1) },
		}, nil
	}
	return nil, fmt.Errorf("bench: unknown scenario %q (known: %s, and %s, %s, %s)", name, strings.Join(Scenarios(), ", "), ScenarioFixedLoc, ScenarioAlloc3, ScenarioAvail)
}
