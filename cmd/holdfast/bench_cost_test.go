package main

import "testing"

// TestMySQLJSONPath: with both engines, MariaDB's --json report goes beside
// PostgreSQL's instead of overwriting it; alone, to the file named.
func TestMySQLJSONPath(t *testing.T) {
	for _, c := range []struct {
		path string
		both bool
		want string
	}{
		{"", true, ""},
		{"out.json", false, "out.json"},
		{"out.json", true, "out-mariadb.json"},
		{"/tmp/run/bench", true, "/tmp/run/bench-mariadb"},
	} {
		if got := mysqlJSONPath(c.path, c.both); got != c.want {
			t.Errorf("mysqlJSONPath(%q, %v) = %q; want %q", c.path, c.both, got, c.want)
		}
	}
}
