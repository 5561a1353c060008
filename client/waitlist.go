package client

import (
	"encoding/json"

	"github.com/holdfast/holdfast/wire"
)

// holdOrWait decodes an answer that is a hold (200, 201) or a waiting
// checkout (202) into both shapes; the status says which one holds.
type holdOrWait struct {
	h *wire.Hold
	w *wire.Waiting
}

func (a *holdOrWait) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, a.h); err != nil {
		return err
	}
	return json.Unmarshal(b, a.w)
}
