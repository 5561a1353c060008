package mysql_test

import (
	"bytes"
	"context"
	"database/sql"
)

// containsText is the conformance harness's Instance.Grep: whether any
// column of any row of any table in the database holds s.
func containsText(db *sql.DB) func(ctx context.Context, s string) (bool, error) {
	return func(ctx context.Context, s string) (bool, error) {
		rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY 1")
		if err != nil {
			return false, err
		}
		var tables []string
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return false, err
			}
			tables = append(tables, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		for _, t := range tables {
			found, err := tableContains(ctx, db, t, []byte(s))
			if err != nil || found {
				return found, err
			}
		}
		return false, nil
	}
}

func tableContains(ctx context.Context, db *sql.DB, table string, s []byte) (bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM `"+table+"`")
	if err != nil {
		return false, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return false, err
		}
		for _, v := range vals {
			if bytes.Contains(v, s) {
				return true, nil
			}
		}
	}
	return false, rows.Err()
}
