package pods

import (
	"context"
	"errors"
	"time"
)

// Map is the shard map: which pod each shop lives on, kept in a small
// control database (package postgres/podmap is the PostgreSQL one). The
// router reads it only through its cache (Config.CacheTTL), so the control
// database sees one lookup per shop per TTL per router, not one per
// request. Implementations must be safe for concurrent use.
type Map interface {
	// Lookup answers the shop's placement, or ErrUnassigned when the shop
	// has none yet.
	Lookup(ctx context.Context, shopID int64) (Placement, error)
	// Assign places an unassigned shop on pod and answers the placement
	// that holds afterwards: when another router assigned the shop first,
	// that one (the first assignment wins, so routers agree). ErrUnknownPod
	// when pod is not registered.
	Assign(ctx context.Context, shopID int64, pod string) (Placement, error)
	// Switch moves a shop's placement from one pod to another, guarded by
	// the placement it expects (from and epoch): ErrPlacementChanged when
	// the shop is no longer there. It answers the new placement, whose
	// Epoch is one more. Moves (issue #28 item 2) call it after the fence.
	Switch(ctx context.Context, shopID int64, from string, epoch int64, to string) (Placement, error)
	// List pages through placements by shop id: at most limit (bounded by
	// ListLimitMax) with a shop id above after.
	List(ctx context.Context, after int64, limit int) ([]Placement, error)
	// Pods lists the registered pods with their shop counts, by name.
	Pods(ctx context.Context) ([]PodInfo, error)
	// Register adds pods that are not registered yet (accepting new
	// shops); registered ones are left as they are.
	Register(ctx context.Context, names []string) error
	// SetAcceptsNew says whether the assignment policy may place new shops
	// on pod (false drains it of new shops; its shops stay).
	SetAcceptsNew(ctx context.Context, pod string, accepts bool) error
	// Changes answers the placement changes (switches, removals) made
	// within the last window by the map's clock, oldest first, at most
	// limit. Routers follow them (Config.FollowInterval).
	Changes(ctx context.Context, window time.Duration, limit int) ([]Change, error)
}

// Change is one change of a shop's placement. Revisions grow, but may
// commit out of order: a follower reads a window, not "after revision n".
type Change struct {
	Revision int64 `json:"revision"`
	ShopID   int64 `json:"shop_id"`
}

// ListLimitMax bounds one page of Map.List.
const ListLimitMax = 10_000

// Placement is where one shop lives. Epoch starts at 1 and grows by one at
// every switch, so a placement read before a move is told apart from one
// read after it.
type Placement struct {
	ShopID     int64     `json:"shop_id"`
	Pod        string    `json:"pod"`
	Epoch      int64     `json:"epoch"`
	AssignedAt time.Time `json:"assigned_at"`
}

// PodInfo is a registered pod as the map knows it.
type PodInfo struct {
	Name       string `json:"name"`
	AcceptsNew bool   `json:"accepts_new"`
	Shops      int    `json:"shops"`
}

// Errors of a Map.
var (
	// ErrUnassigned: the shop has no placement yet.
	ErrUnassigned = errors.New("pods: the shop is not assigned to a pod")
	// ErrUnknownPod: the pod is not registered in the map, or not
	// configured in this router.
	ErrUnknownPod = errors.New("pods: unknown pod")
	// ErrPlacementChanged: Switch found the shop elsewhere, or at another
	// epoch, than the caller expected.
	ErrPlacementChanged = errors.New("pods: the shop's placement changed")
)
