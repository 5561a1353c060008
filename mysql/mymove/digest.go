package mymove

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/holdfast/holdfast/pods"
)

// digestTable hashes the shop's rows of t in primary key order: each value
// tagged with its Go type (as the driver scans it) and length-prefixed, so
// the same rows hash the same on any pod of the engine and different rows
// do not run together.
func digestTable(ctx context.Context, conn *sql.Conn, t table, shop int64) (pods.TableDigest, error) {
	d := pods.TableDigest{Table: t.name}
	rows, err := conn.QueryContext(ctx, t.selectOf(), shop)
	if err != nil {
		return d, err
	}
	defer rows.Close()
	h := sha256.New()
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return d, err
		}
		for _, v := range vals {
			buf = buf[:0]
			switch x := v.(type) {
			case nil:
				buf = append(buf, 'N')
			case []byte:
				buf = append(buf, 'B')
				buf = binary.AppendUvarint(buf, uint64(len(x)))
				buf = append(buf, x...)
			case time.Time:
				buf = append(buf, 'T')
				buf = x.UTC().AppendFormat(buf, time.RFC3339Nano)
			default:
				s := fmt.Sprintf("%T:%v", x, x)
				buf = append(buf, 'V')
				buf = binary.AppendUvarint(buf, uint64(len(s)))
				buf = append(buf, s...)
			}
			h.Write(buf)
		}
		h.Write([]byte{'\n'})
		d.Rows++
	}
	if err := rows.Err(); err != nil {
		return d, err
	}
	if d.Rows > 0 {
		d.Hash = hex.EncodeToString(h.Sum(nil))
	}
	return d, nil
}
