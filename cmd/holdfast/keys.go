package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgstore"
)

func init() { register(newKeysCmd) }

func newKeysCmd() *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys",
		Short: "create, rotate, revoke and list API keys of holdfast serve",
		Long: `Create, rotate, revoke and list the API keys holdfast serve accepts.

A new key is printed once, alone on the last line of stdout; only its hash is
stored. With the embedded database, keys uses the cluster in --data-dir, the
running server's when serve runs (with --engine mariadb: the private MariaDB
of the serve --engine mariadb running there).

keys create applies the schema to a fresh database, as serve and migrate
do; list, rotate and revoke never change the schema: on a database without
it they say to run holdfast migrate.`,
		Args: noArgs,
	}
	dataDir := dataDirFlag(keys.PersistentFlags())
	engine := engineFlag(keys.PersistentFlags())

	create := &cobra.Command{
		Use:   "create (--shop N | --admin) [--name NAME] [--scopes storefront,inventory|all] [--expires-in DURATION]",
		Short: "create a key that reaches shop N only, or (--admin) every shop",
		Long: `Create a key that reaches shop N only, or (--admin) every shop.

--scopes limits what it may do in the shop: storefront (reserve, edit,
claim, release, extend, read holds and stock), inventory (set and adjust
stock, set safety stock, per-buyer limits and the location order, read
stock), or all; without --scopes the key keeps every scope. The key is
printed once, alone on the last line (` + "`holdfast keys create --shop 1 | tail -n1`" + `).`,
		Args: noArgs,
	}
	shop := create.Flags().Int64("shop", 0, "the shop the key reaches")
	admin := create.Flags().Bool("admin", false, "a key that reaches every shop")
	name := create.Flags().String("name", "", "a label for people, shown by keys list")
	scopes := create.Flags().String("scopes", "", "comma list of storefront, inventory or all (default: every scope)")
	expiresIn := create.Flags().Duration("expires-in", 0, "the key stops working after this long, e.g. 720h (default: never)")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		if *admin == (*shop != 0) || *shop < 0 {
			return usageError("keys create needs exactly one of --shop N (N > 0) or --admin")
		}
		spec := httpapi.KeySpec{ShopID: *shop, Admin: *admin, Name: *name}
		if len(spec.Name) > httpapi.KeyNameMaxLen {
			return usageError("--name has at most %d bytes", httpapi.KeyNameMaxLen)
		}
		if cmd.Flags().Changed("scopes") && strings.Trim(*scopes, ", \t") == "" {
			// A script's empty variable must not grant every scope.
			return usageError("--scopes is empty: name storefront, inventory or all, or leave the flag out for every scope")
		}
		var err error
		if spec.Scopes, err = httpapi.ParseScopes(*scopes); err != nil {
			return usageError("--scopes: %s", strings.TrimPrefix(err.Error(), "httpapi: "))
		}
		if *expiresIn < 0 || cmd.Flags().Changed("expires-in") && *expiresIn == 0 {
			return usageError("--expires-in must be positive")
		}
		if *expiresIn > 0 {
			spec.ExpiresAt = time.Now().Add(*expiresIn)
		}
		// existing: a key for a database that serve does not use is
		// useless, so a directory without one is an error, not a new
		// cluster (database.go).
		return withKeyStore(cmd.Context(), *engine, existing, *dataDir, setsUpSchema, func(ctx context.Context, st httpapi.Store) error {
			key, rec, err := httpapi.CreateKeyWith(ctx, st, spec)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created key %d: %s; it is shown this once, only its hash is stored:\n%s\n", rec.ID, describeKey(rec), key)
			return err
		})
	}

	rotate := &cobra.Command{
		Use:   "rotate ID|KEY [--grace DURATION]",
		Short: "replace a key: a new one with the same shop, name and scopes; the old one works for --grace more",
		Long: `Replace a live key (by its id or the key itself) with a new key of the same
shop, name and scopes. The old key keeps working for --grace (default 24h;
0: it stops at once), so callers can switch over. The new key is printed
once, alone on the last line.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("keys rotate needs one key id or key")
			}
			return keyRef("rotate", args[0])
		},
	}
	grace := rotate.Flags().Duration("grace", 24*time.Hour, "how long the old key keeps working")
	rotate.RunE = func(cmd *cobra.Command, args []string) error {
		if *grace < 0 {
			return usageError("--grace must not be negative")
		}
		return withKeyStore(cmd.Context(), *engine, existing, *dataDir, readsSchema, func(ctx context.Context, st httpapi.Store) error {
			key, rec, err := httpapi.RotateKey(ctx, st, args[0], *grace)
			if errors.Is(err, httpapi.ErrKeyNotFound) {
				return notLive(ctx, st, args[0])
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created key %d: %s; the old key stops working in %v; the new key is shown this once:\n%s\n",
				rec.ID, describeKey(rec), *grace, key)
			return err
		})
	}

	revoke := &cobra.Command{
		Use:   "revoke ID|KEY",
		Short: "revoke a key by its id or the key itself",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("keys revoke needs one key id or key")
			}
			return keyRef("revoke", args[0])
		},
	}
	revoke.RunE = func(cmd *cobra.Command, args []string) error {
		return withKeyStore(cmd.Context(), *engine, existing, *dataDir, readsSchema, func(ctx context.Context, st httpapi.Store) error {
			id, err := httpapi.RevokeKey(ctx, st, args[0])
			if errors.Is(err, httpapi.ErrKeyNotFound) {
				return notLive(ctx, st, args[0])
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked key %d (servers stop accepting it within %v)\n", id, httpapi.KeyCacheTTLDefault)
			return err
		})
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "list keys, newest first",
		Args:  noArgs,
	}
	limit := list.Flags().Int("limit", 100, "at most this many keys, newest first")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		if *limit < 1 || *limit > 100_000 {
			return usageError("keys list takes --limit between 1 and 100000")
		}
		return withKeyStore(cmd.Context(), *engine, existing, *dataDir, readsSchema, func(ctx context.Context, st httpapi.Store) error {
			keys, err := httpapi.ListKeys(ctx, st, *limit)
			if err != nil {
				return err
			}
			return writeKeys(cmd.OutOrStdout(), keys)
		})
	}
	keys.AddCommand(create, rotate, revoke, list)
	return keys
}

// describeKey says what a key reaches and may do, for people.
func describeKey(k *httpapi.APIKey) string {
	s := fmt.Sprintf("shop %d", k.ShopID)
	if k.Admin {
		s = "every shop (admin)"
	}
	s += ", scopes " + scopeList(k.Scopes)
	if k.Name != "" {
		s += fmt.Sprintf(", name %q", k.Name)
	}
	if k.ExpiresAt != nil {
		s += ", expires " + k.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return s
}

func scopeList(scopes []httpapi.Scope) string {
	if len(scopes) == 0 {
		return "-"
	}
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return strings.Join(out, ",")
}

// writeKeys prints keys as a table: id, shop, name, scopes, created,
// expires, last used and revoked.
func writeKeys(w io.Writer, keys []httpapi.APIKey) error {
	stamp := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSHOP\tNAME\tSCOPES\tCREATED\tEXPIRES\tLAST USED\tREVOKED")
	for _, k := range keys {
		shop := "shop " + strconv.FormatInt(k.ShopID, 10)
		if k.Admin {
			shop = "admin"
		}
		name := k.Name
		if name == "" {
			name = "-"
		} else if strings.ContainsAny(name, "\t\r\n") {
			name = strconv.Quote(name) // one row per key
		}
		created := k.CreatedAt
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, shop, name, scopeList(k.Scopes),
			stamp(&created), stamp(k.ExpiresAt), stamp(k.LastUsedAt), stamp(k.RevokedAt))
	}
	return tw.Flush()
}

// withKeyStore runs f on the keys' store: withKeysDB's database on
// PostgreSQL; on MariaDB (--engine, or a mysql:// DATABASE_URL)
// DATABASE_URL or the private server of the serve running with dataDir,
// migrated.
func withKeyStore(ctx context.Context, engineFlag string, mode dbMode, dataDir string, schema schemaUse, f func(context.Context, httpapi.Store) error) error {
	return withServiceDB(ctx, engineFlag, mode, dataDir, schema,
		func(db *sql.DB) error { return f(ctx, mysqlstore.Service(db)) },
		func(pool *pgxpool.Pool) error { return f(ctx, pgstore.Service(pool)) })
}

// schemaUse says what a command does with the schema.
type schemaUse int

const (
	// readsSchema: the command only reads the schema and refuses, in one
	// line, a database without the current one (every command but those
	// below: a mistyped DATABASE_URL must not grow a schema).
	readsSchema schemaUse = iota
	// setsUpSchema: the command applies pending migrations first, as serve
	// and migrate do: the setup commands keys create and webhooks add.
	setsUpSchema
)

// withServiceDB runs onMySQL or onPostgres on the database of the
// service's own records (keys, webhooks): on MariaDB (--engine, or a
// mysql:// DATABASE_URL) DATABASE_URL or the private server of the serve
// running with dataDir; else withKeysDB's. schema says whether it migrates
// first (setsUpSchema) or refuses a database that is not current.
func withServiceDB(ctx context.Context, engineFlag string, mode dbMode, dataDir string, schema schemaUse, onMySQL func(*sql.DB) error, onPostgres func(*pgxpool.Pool) error) error {
	engine, err := resolveEngine(engineFlag)
	if err != nil {
		return err
	}
	if engine == engineMySQL {
		mdb, err := openServedMySQL(ctx, dataDir)
		if err != nil {
			return err
		}
		defer mdb.Close()
		if schema == setsUpSchema {
			err = mdb.migrate(ctx)
		} else {
			err = mdb.requireSchema(ctx)
		}
		if err != nil {
			return err
		}
		sdb, err := mdb.open(2)
		if err != nil {
			return err
		}
		defer sdb.Close()
		return onMySQL(sdb)
	}
	return withKeysDB(ctx, mode, dataDir, schema, func(_ context.Context, pool *pgxpool.Pool) error { return onPostgres(pool) })
}

// withKeysDB runs f on the keys' database. With setsUpSchema (keys
// create, webhooks add) it migrates it first, as serve would; with
// readsSchema it only reads the schema version and refuses a database that
// is not current.
func withKeysDB(ctx context.Context, mode dbMode, dataDir string, schema schemaUse, f func(context.Context, *pgxpool.Pool) error) error {
	db, err := openDatabase(ctx, mode, dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-keys")
	if err != nil {
		return err
	}
	defer pool.Close()
	if schema == setsUpSchema {
		_, err = migrations.Up(ctx, pool)
	} else {
		err = requireSchema(ctx, pool)
	}
	if err != nil {
		return err
	}
	return f(ctx, pool)
}

// keyRef checks that arg names a key: an id (keys list's first column) or
// the key itself (hf_…), before any database is opened.
func keyRef(verb, arg string) error {
	if strings.HasPrefix(arg, "hf_") {
		return nil
	}
	if n, err := strconv.ParseInt(arg, 10, 64); err == nil && n > 0 {
		return nil
	}
	return usageError("keys %s takes a key id (a number from keys list) or the key itself (hf_…), not %q", verb, redact(arg))
}

// redact keeps a key out of error output: only its first characters.
func redact(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}

// notLive is the refusal of keys revoke or rotate when no live key
// matches ref: why, when ref is an id this database knows (revoked,
// expired), else that no key has it.
func notLive(ctx context.Context, st httpapi.Store, ref string) error {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		keys, err := httpapi.ListKeys(ctx, st, keysScanMax)
		if err == nil {
			for _, k := range keys {
				if k.ID != id {
					continue
				}
				switch {
				case k.RevokedAt != nil:
					return &exitError{code: 1, msg: fmt.Sprintf("key %d is already revoked (at %s); nothing changed", id, k.RevokedAt.UTC().Format(time.RFC3339))}
				case k.ExpiresAt != nil:
					return &exitError{code: 1, msg: fmt.Sprintf("key %d expired at %s; nothing changed", id, k.ExpiresAt.UTC().Format(time.RFC3339))}
				}
			}
		}
	}
	return &exitError{code: 1, msg: "no live key matches " + redact(ref) + " in this database (keys list shows every key, revoked and expired ones too; the server's --data-dir or DATABASE_URL?)"}
}

// keysScanMax bounds the keys notLive reads to say why a key is not live.
const keysScanMax = 100_000
