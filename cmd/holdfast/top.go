package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql/mysqlops"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
)

func init() { register(newTopCmd) }

func newTopCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top",
		Short: "live view: holds/s, connection time by caller, dead tuples, hottest keys",
		Long: `A refreshing view of the database behind DATABASE_URL (or the embedded cluster in
--data-dir, the running server's when serve runs). Quit with q or Ctrl-C.
On MariaDB (a mysql:// DATABASE_URL, or --engine mariadb with the data
directory of serve --engine mariadb) it shows holds, purge lag, open
transactions and connection-seconds by caller. It only reads: on a database
without the current schema it says to run holdfast migrate.
When stdout is not a terminal, top prints one frame and exits, as --once.`,
		Args: noArgs,
	}
	fs := cmd.Flags()
	dataDir := dataDirFlag(fs)
	interval := fs.Duration("interval", time.Second, "refresh interval")
	once := fs.Bool("once", false, "print one frame and exit, without terminal control codes; its rates are measured over one --interval")
	strategy := fs.String("strategy", "", "the service's default strategy ("+strategyNames()+"); empty: holdfast's default")
	poolCap := fs.Int("pool-cap", 0, "the service's default pool cap; 0: holdfast's default")
	engine := engineFlag(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		st, err := parseStrategy(*strategy)
		if err != nil {
			return err
		}
		if *interval < 100*time.Millisecond {
			return usageError("--interval must be at least 100ms")
		}
		if f, ok := cmd.OutOrStdout().(*os.File); !*once && (!ok || !term.IsTerminal(int(f.Fd()))) {
			// Not a terminal (a pipe, a file, a CI log): screen control
			// codes forever would help no one.
			fmt.Fprintln(cmd.ErrOrStderr(), "holdfast top: stdout is not a terminal: printing one frame, as with --once")
			*once = true
		}
		eng, err := resolveEngine(*engine)
		if err != nil {
			return err
		}
		if eng == engineMySQL {
			return runMySQLTop(cmd.Context(), cmd.OutOrStdout(), *dataDir, *interval, *once)
		}
		return runTop(cmd.Context(), cmd.OutOrStdout(), *dataDir, *interval, *once, holdfast.Config{Strategy: st, PoolCap: *poolCap})
	}
	return cmd
}

func runTop(ctx context.Context, out io.Writer, dataDir string, interval time.Duration, once bool, cfg holdfast.Config) error {
	db, err := openDatabase(ctx, existing, dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-top")
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := requireSchema(ctx, pool); err != nil {
		return err
	}
	// The client fills in holdfast's defaults (strategy, pool cap), so
	// keys without an override show the strategy they really run.
	hc, err := postgres.New(pool, cfg)
	if err != nil {
		return configError(err)
	}
	top := pgops.NewTop(pool, hc.Config(), interval)
	return showTop(ctx, out, interval, once, func(ctx context.Context) (string, error) {
		s, err := top.Collect(ctx)
		if err != nil {
			return "", err
		}
		return pgops.Render(s), nil
	})
}

// runMySQLTop is top on MySQL/MariaDB: DATABASE_URL=mysql://…, or the
// private MariaDB of the serve running with dataDir.
func runMySQLTop(ctx context.Context, out io.Writer, dataDir string, interval time.Duration, once bool) error {
	d, err := openServedMySQL(ctx, dataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.requireSchema(ctx); err != nil {
		return err
	}
	db, err := d.open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	top := mysqlops.NewTop(db, interval)
	return showTop(ctx, out, interval, once, func(ctx context.Context) (string, error) {
		s, err := top.Collect(ctx)
		if err != nil {
			return "", err
		}
		return mysqlops.RenderTop(s), nil
	})
}

// showTop draws frames from collect: with once, one frame whose rates are
// measured over one interval, without terminal control codes; else a
// refreshing view until q, Ctrl-C or ctx ends.
func showTop(ctx context.Context, out io.Writer, interval time.Duration, once bool, collect func(context.Context) (string, error)) error {
	if once {
		if _, err := collect(ctx); err != nil {
			return err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		frame, err := collect(ctx)
		if err != nil {
			return err
		}
		fmt.Fprint(out, frame)
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	newline := "\n"
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		// Raw mode lets a single q quit; Ctrl-C then arrives as a byte.
		if old, err := term.MakeRaw(fd); err == nil {
			defer term.Restore(fd, old) //nolint:errcheck
			newline = "\r\n"
		}
	}
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			b, err := r.ReadByte()
			if err != nil || b == 'q' || b == 'Q' || b == 3 {
				if err == nil {
					cancel()
				}
				return
			}
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		frame, err := collect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		frame += "(q to quit)\n"
		fmt.Fprint(out, "\x1b[H\x1b[2J"+strings.ReplaceAll(frame, "\n", newline))
		select {
		case <-ctx.Done():
			fmt.Fprint(out, newline)
			return nil
		case <-tick.C:
		}
	}
}
