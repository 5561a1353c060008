package pods

import "context"

// MoveWithHook is Move with a hook after its steps (see move).
func MoveWithHook(ctx context.Context, p MoveParams, hook func(step string) error) (*MoveReport, error) {
	return move(ctx, p, hook)
}
