package client

import (
	"encoding/json"
	"time"

	"github.com/holdfast/holdfast"
)

// waitingJSON is the API's 202 answer: a checkout in a waitlist.
type waitingJSON struct {
	Status    string               `json:"status"`
	Position  int                  `json:"position"`
	WaitUntil time.Time            `json:"wait_until"`
	Lines     []holdfast.Shortfall `json:"lines"`
}

func (w *waitingJSON) err() error {
	return &holdfast.WaitlistedError{Position: w.Position, WaitUntil: w.WaitUntil, Lines: w.Lines}
}

// holdOrWait decodes an answer that is a hold (200, 201) or a waiting
// checkout (202) into both shapes; the status says which one holds.
type holdOrWait struct {
	h *holdJSON
	w *waitingJSON
}

func (a *holdOrWait) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, a.h); err != nil {
		return err
	}
	return json.Unmarshal(b, a.w)
}
