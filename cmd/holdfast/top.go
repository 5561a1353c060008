package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/migrate"
	"github.com/holdfast/holdfast/ops"
)

func init() {
	register(&command{name: "top", summary: "live view: holds/s, connection time by caller, dead tuples, hottest keys", run: runTop})
}

func runTop(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	dataDir := fs.String("data-dir", defaultDataDir, "embedded cluster directory, when DATABASE_URL is unset")
	interval := fs.Duration("interval", time.Second, "refresh interval")
	once := fs.Bool("once", false, "print two frames one interval apart (the second has rates) and exit, without terminal control codes")
	strategy := fs.String("strategy", "", "the service's default strategy (counter, pool or slots); empty: holdfast's default")
	poolCap := fs.Int("pool-cap", 0, "the service's default pool cap; 0: holdfast's default")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: holdfast top [flags]\n\nA refreshing view of the database behind DATABASE_URL (or the embedded cluster in\n--data-dir). Quit with q or Ctrl-C.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *interval < 100*time.Millisecond {
		return fmt.Errorf("%w: --interval must be at least 100ms", errUsage)
	}
	cfg := holdfast.Config{Strategy: holdfast.Strategy(*strategy), PoolCap: *poolCap}
	if cfg.Strategy != "" && !cfg.Strategy.Valid() {
		return fmt.Errorf("%w: unknown --strategy %q", errUsage, *strategy)
	}
	db, err := openDatabase(ctx, persistent, *dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-top")
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate.Check(ctx, pool); err != nil {
		return err
	}
	top := ops.NewTop(pool, cfg, *interval)

	if *once {
		if _, err := top.Collect(ctx); err != nil {
			return err
		}
		t := time.NewTimer(*interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		s, err := top.Collect(ctx)
		if err != nil {
			return err
		}
		fmt.Print(ops.Render(s))
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
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		s, err := top.Collect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		frame := ops.Render(s) + "(q to quit)\n"
		fmt.Print("\x1b[H\x1b[2J" + strings.ReplaceAll(frame, "\n", newline))
		select {
		case <-ctx.Done():
			fmt.Print(newline)
			return nil
		case <-tick.C:
		}
	}
}
