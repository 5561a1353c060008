package health

import (
	"fmt"
	"strings"

	"github.com/holdfast/holdfast"
)

// SafetyKey is a key with a safety stock (the engine's SetSafetyStock).
type SafetyKey struct {
	holdfast.Key
	Available int `json:"available"`
	Safety    int `json:"safety"`
	Held      int `json:"held"`
}

// SafetyStock summarises the keys that keep a safety stock.
type SafetyStock struct {
	// Keys keep a safety stock of Units units in all.
	Keys  int   `json:"keys"`
	Units int64 `json:"units"`
	// AtSafety have nothing left to sell (available - held <= safety);
	// Below of them have less than the safety stock itself on hand
	// beyond their holds (available - held < safety).
	AtSafety int `json:"at_safety"`
	Below    int `json:"below"`
	// Tightest are the keys at or below their safety stock, tightest first.
	Tightest []SafetyKey `json:"tightest"`
}

// SafetyFindings are the doctor's findings about safety stock, on either
// engine: "safety" (ok) with how many keys keep one and which are at it,
// and "safety.below" (warn) when a key's stock beyond its holds is below its
// safety stock.
func SafetyFindings(s *SafetyStock) []Finding {
	if s.Keys == 0 {
		return []Finding{{Check: "safety", Severity: SeverityOK, Message: "no key keeps a safety stock"}}
	}
	var at, below []string
	for _, k := range s.Tightest {
		d := fmt.Sprintf("%d/%d/%d available %d, held %d, safety %d", k.ShopID, k.ItemID, k.LocationID, k.Available, k.Held, k.Safety)
		at = append(at, d)
		if k.Available-k.Held < k.Safety {
			below = append(below, d)
		}
	}
	msg := fmt.Sprintf("%d keys keep a safety stock (%d units withheld from sale); %d at it (nothing left to sell)", s.Keys, s.Units, s.AtSafety)
	if len(at) > 0 {
		msg += ": " + strings.Join(at, "; ")
	}
	out := []Finding{{Check: "safety", Severity: SeverityOK, Message: msg,
		Meaning: "sellable is available - safety - held: keys at their safety stock answer insufficient_stock while units are still on hand"}}
	if s.Below > 0 {
		out = append(out, Finding{Check: "safety.below", Severity: SeverityWarn,
			Message: fmt.Sprintf("%d keys have less than their safety stock beyond their holds: %s", s.Below, strings.Join(below, "; ")),
			Meaning: "a stock reduction, or a safety stock raised over active holds, left less on hand than the reserve asked for; the holds stay claimable and nothing more is sold",
			Action:  "restock the keys, or lower their safety stock if the reserve is no longer wanted"})
	}
	return out
}
