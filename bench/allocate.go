package bench

import (
	"math/rand/v2"

	"github.com/holdfast/holdfast"
)

// Allocation scenarios (issue #16): the same one-unit, one-line carts over
// the same keys — allocItems items stocked at three locations — once with a
// fixed location and once allocated by the engine from three candidate
// locations. Run them in one bench to read the cost of allocation as a
// ratio: `holdfast bench --scenarios fixed-loc,alloc3 --strategies batch`.
const (
	// ScenarioFixedLoc reserves one unit of a random item at a random one
	// of its three locations.
	ScenarioFixedLoc = "fixed-loc"
	// ScenarioAlloc3 reserves one unit of a random item with location 0
	// and its three locations as candidates, in a random priority order.
	ScenarioAlloc3 = "alloc3"
)

// allocItems is the allocation scenarios' item count (each at three
// locations).
const allocItems = 1000

// AllocationScenarios lists the allocation scenarios. They are not in
// Scenarios (the default run); name them with Options.Scenarios. They run
// on engine strategies only: the baselines have no allocation.
func AllocationScenarios() []string { return []string{ScenarioFixedLoc, ScenarioAlloc3} }

// allocScenario builds an allocation scenario; false for another name.
func allocScenario(name string, o *Options) (*scenario, bool) {
	if name != ScenarioFixedLoc && name != ScenarioAlloc3 {
		return nil, false
	}
	keys := make([]holdfast.Key, 0, 3*allocItems)
	for i := range allocItems {
		for loc := int64(1); loc <= 3; loc++ {
			keys = append(keys, holdfast.Key{ShopID: benchShop, ItemID: int64(i + 1), LocationID: loc})
		}
	}
	sc := &scenario{name: name, keySet: "locations", keys: keys, units: o.HotStock, engineOnly: true}
	if name == ScenarioFixedLoc {
		sc.lines = func(r *rand.Rand) []holdfast.Line {
			return []holdfast.Line{{ItemID: int64(1 + r.IntN(allocItems)), LocationID: int64(1 + r.IntN(3)), Quantity: 1}}
		}
		return sc, true
	}
	sc.lines = func(r *rand.Rand) []holdfast.Line {
		p := r.Perm(3)
		return []holdfast.Line{{ItemID: int64(1 + r.IntN(allocItems)), Quantity: 1,
			Candidates: holdfast.LocationsOf(int64(p[0]+1), int64(p[1]+1), int64(p[2]+1))}}
	}
	return sc, true
}
