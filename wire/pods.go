package wire

import "time"

// PodList is the answer of GET /v1/admin/pods.
type PodList struct {
	Pods []Pod `json:"pods"`
}

// Pod is one pod of a deployment over pods: the map's view (shops, new
// shops) and the server's (up, its breaker).
type Pod struct {
	Name       string `json:"name"`
	Shops      int    `json:"shops"`
	AcceptsNew bool   `json:"accepts_new"`
	// Configured: the pod is in this server's pods file (a pod the map
	// knows but the server does not serves none of its shops here).
	Configured bool `json:"configured"`
	// Up is false while the server's breaker turns the pod's shops away.
	Up        bool       `json:"up"`
	Since     *time.Time `json:"since,omitempty"`
	LastError string     `json:"last_error,omitempty"`
	InFlight  int64      `json:"in_flight"`
	Refused   int64      `json:"refused"`
}

// Placement is a shop's pod (GET /v1/admin/pods/shops/{shop_id}).
type Placement struct {
	ShopID     int64     `json:"shop_id"`
	Pod        string    `json:"pod"`
	Epoch      int64     `json:"epoch"`
	AssignedAt time.Time `json:"assigned_at"`
	// MoveID is the move of the shop running on this server, if any.
	MoveID int64 `json:"move_id,omitempty"`
}

// MoveRequest is the body of POST /v1/admin/pods/moves.
type MoveRequest struct {
	ShopID int64  `json:"shop"`
	To     string `json:"to"`
	// Method is auto (or absent), stream or copy.
	Method string `json:"method,omitempty"`
}

// Move is a shop move the server runs or ran (POST and GET
// /v1/admin/pods/moves…).
type Move struct {
	ID     int64  `json:"move_id"`
	ShopID int64  `json:"shop_id"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Method is as asked: auto, stream or copy.
	Method string `json:"method"`
	// State is running, done, failed or unresolved.
	State string `json:"state"`
	// Step is the last step reached: starting, fencing, fenced, copied,
	// verified, gone, switched.
	Step      string      `json:"step"`
	Aborted   bool        `json:"aborted,omitempty"`
	StartedAt time.Time   `json:"started_at"`
	EndedAt   *time.Time  `json:"ended_at,omitempty"`
	Report    *MoveReport `json:"report,omitempty"`
	// Error is why the move failed (or, done, what failed after the
	// switch): the code and message an answer would carry.
	Error *MoveError `json:"error,omitempty"`
}

// MoveError is a move's failure.
type MoveError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// MoveReport is what a move that switched did, its timings in
// milliseconds (pods.MoveReport).
type MoveReport struct {
	Epoch       int64   `json:"epoch"`
	Rows        int64   `json:"rows"`
	Method      string  `json:"method"`
	StreamMS    float64 `json:"stream_ms"`
	FenceMS     float64 `json:"fence_ms"`
	FenceWaitMS float64 `json:"fence_wait_ms"`
	CopyMS      float64 `json:"copy_ms"`
	VerifyMS    float64 `json:"verify_ms"`
	SwitchMS    float64 `json:"switch_ms"`
	PurgeMS     float64 `json:"purge_ms"`
	Purged      int64   `json:"purged"`
}

// MoveList is the answer of GET /v1/admin/pods/moves: the moves running
// and the last ones that ended, newest first.
type MoveList struct {
	Moves []Move `json:"moves"`
}

// MoveAbort is the answer of POST /v1/admin/pods/shops/{shop_id}/abort.
type MoveAbort struct {
	ShopID int64 `json:"shop_id"`
	// Pod is where the map places the shop, which now serves it.
	Pod string `json:"pod"`
	// Cancelled is the move of the shop this server ran, cancelled.
	Cancelled *Move    `json:"cancelled,omitempty"`
	Discarded []string `json:"discarded"`
	Restored  bool     `json:"restored"`
	Accepted  bool     `json:"accepted"`
	Purged    int64    `json:"purged"`
}

// MS is d in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
