package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"syscall"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// failureLine is err as the one line a user reads after "holdfast CMD: ":
// a failure to reach the database says what failed and what to check,
// never the driver's multi-line dump, its TLS fallback noise or a
// password; anything else is err's text on one line.
func failureLine(err error) string {
	if s := connFailure(err); s != "" {
		return s
	}
	return oneLine(err.Error())
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}

// connFailure describes a failure to connect to or log in to the
// database, or "" when err is none.
func connFailure(err error) string {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	var me *mysqldriver.MySQLError
	var dns *net.DNSError
	var op *net.OpError
	var refused *postgres.LoginRefusedError
	where := ""
	if errors.As(err, &ce) && ce.Config != nil {
		where = fmt.Sprintf(" at %s:%d", ce.Config.Host, ce.Config.Port)
		if len(ce.Config.Fallbacks) > 0 {
			where = " at a host of DATABASE_URL" // pgx names the first; any may have refused
		}
	}
	switch {
	case errors.As(err, &refused):
		return fmt.Sprintf("PostgreSQL refused the login of user %q to database %q at every host of DATABASE_URL (%s; SQLSTATE %s: wrong password, no such user or database, or no CONNECT privilege): check the user, password and database in DATABASE_URL",
			refused.User, refused.Database, refused.Err.Message, refused.Err.Code)
	case postgres.RefusedByOneHost(err):
		return fmt.Sprintf("PostgreSQL%s refused the login of user %q and no other host took it (SQLSTATE %s: a standby that has not replayed the role or database yet refuses it during a failover; otherwise a wrong password, or no such user or database): retry, or check the user, password and database in DATABASE_URL",
			where, ce.Config.User, postgres.OneHostRefusal(err).Code)
	case errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000"):
		user := ""
		if ce != nil && ce.Config != nil {
			user = fmt.Sprintf(" %q", ce.Config.User)
		}
		return fmt.Sprintf("PostgreSQL%s refused the login of user%s (wrong password, or no such user): check the user and password in DATABASE_URL", where, user)
	case errors.As(err, &pe) && pe.Code == "3D000":
		return fmt.Sprintf("PostgreSQL%s has no such database (%s): check the database name in DATABASE_URL", where, pe.Message)
	case errors.As(err, &me) && (me.Number == 1045 || me.Number == 1044 || me.Number == 1698):
		return "MySQL/MariaDB refused the login (" + me.Message + "): check the user and password in DATABASE_URL"
	case errors.As(err, &me) && me.Number == 1049:
		return "MySQL/MariaDB has no such database (" + me.Message + "): check the database name in DATABASE_URL"
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve the database host %q: check the host in DATABASE_URL", dns.Name)
	case errors.As(err, &op) && op.Op == "dial":
		db := "PostgreSQL"
		if ce == nil && isMySQLURL(os.Getenv("DATABASE_URL")) {
			db = "MySQL/MariaDB"
		} else if ce == nil {
			db = "the database"
		}
		reason := "unreachable"
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			reason = "connection refused"
		case errors.Is(err, context.DeadlineExceeded) || op.Timeout():
			reason = "timed out"
		}
		addr := ""
		if op.Addr != nil {
			addr = " at " + op.Addr.String()
		}
		return fmt.Sprintf("cannot connect to %s%s (%s): is the server running? check the host and port in DATABASE_URL", db, addr, reason)
	}
	return ""
}

// configError is an engine constructor's error: a rejected setting is a
// usage error (exit 2); anything else, such as a database that cannot be
// reached, is a failure to run (exit 1).
func configError(err error) error {
	if errors.Is(err, holdfast.ErrInvalidArgument) {
		return usageError("%s", strings.TrimPrefix(err.Error(), "holdfast: "))
	}
	return err
}

// listen listens on addr for the flag that named it; a taken or bad
// address is one line saying which flag to change.
func listen(addr, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s is already in use (another holdfast serve?): stop what listens there, or pass another %s", flag, addr, flag)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("%s %s: permission denied (ports below 1024 need privileges): pass another %s", flag, addr, flag)
	}
	return nil, fmt.Errorf("%s %s: cannot listen (%s): pass a host:port such as 127.0.0.1:8080", flag, addr, lastCause(err))
}

// lastCause is the innermost text of err (net's "listen tcp …: " prefix
// dropped).
func lastCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// pflagInvalid is pflag's message for a value its type cannot parse.
var pflagInvalid = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag: `)

// flagValueError rewrites pflag's error for an unparsable value (which
// quotes Go's strconv or time errors) as what the flag takes.
func flagValueError(cmd *cobra.Command, err error) error {
	m := pflagInvalid.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := cmd.Flags().Lookup(m[2])
	if f == nil {
		return err
	}
	return fmt.Errorf("--%s %q: %s", f.Name, m[1], wants(f))
}

// wants says what a flag's value must be, by its type.
func wants(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "must be a whole number"
	case "float32", "float64":
		return "must be a number"
	case "bool":
		return "must be true or false"
	case "duration":
		return "must be a duration with a unit, such as 500ms, 30s, 5m or 2h"
	case "intSlice", "int64Slice", "int32Slice", "uintSlice":
		return "must be a comma list of whole numbers"
	}
	return "is not a valid value"
}
