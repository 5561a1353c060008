package faulttest

import (
	"context"
	"errors"
)

func holdfastIs(err, target error) bool { return errors.Is(err, target) }

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
