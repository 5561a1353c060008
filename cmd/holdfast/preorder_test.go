package main

import (
	"strings"
	"testing"
)

// TestPreorderUsageErrors: a malformed setting is a usage error naming the
// flag, before any database is opened.
func TestPreorderUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/db") // never reached
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"preorder", "set", "--item", "9", "--location", "1", "--cap", "1", "--expected", "2027-01-01T00:00:00Z"}, "--shop: must be a positive integer"},
		{[]string{"preorder", "set", "--shop", "1", "--item", "9", "--location", "1", "--cap", "5"}, "--expected: required with a positive cap"},
		{[]string{"preorder", "set", "--shop", "1", "--item", "9", "--location", "1", "--cap", "-1"}, "--cap: must be between 0 and"},
		{[]string{"preorder", "set", "--shop", "1", "--item", "9", "--location", "1", "--cap", "1", "--expected", "soon"}, "--expected: want an RFC 3339 time"},
		{[]string{"preorder", "get", "--shop", "1", "--item", "9"}, "--location: must be a positive integer"},
	} {
		code, _, errOut := run(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want an error with %q", c.args, code, errOut, c.want)
		}
	}
}
