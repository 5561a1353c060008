package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
)

// Bounds of the doctor over pods.
const (
	podsDoctorConcurrency = 4
	podsDoctorPodTimeout  = 2 * time.Minute
)

// doctor runs holdfast's doctor on every PostgreSQL pod, at most
// podsDoctorConcurrency at once, each bounded by podsDoctorPodTimeout, and
// merges the reports: each finding's check is prefixed with its pod
// ("a: invariant"). A pod the doctor cannot reach is a critical finding
// that names it — the report is partial and says which pod it lacks, never
// a clean bill for a pod it did not check. A MariaDB pod is a warning that
// points to its own doctor (holdfast doctor --engine mariadb).
func (s *podSet) doctor(ctx context.Context) (*health.Report, error) {
	out := &health.Report{Database: fmt.Sprintf("%d pods", len(s.file.Pods)), Server: "pods", At: time.Now()}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, podsDoctorConcurrency)
	)
	add := func(f ...health.Finding) {
		mu.Lock()
		out.Findings = append(out.Findings, f...)
		mu.Unlock()
	}
	engines := map[string]holdfast.Engine{}
	for _, p := range s.pods {
		engines[p.Name] = p.Engine
	}
	for _, p := range s.file.Pods {
		pool := s.pgPools[p.Name]
		if pool == nil {
			add(health.Finding{Check: p.Name + ": doctor", Severity: health.SeverityWarn,
				Message: "pod " + p.Name + " runs on MariaDB: this doctor checks PostgreSQL pods only",
				Action:  "run `holdfast doctor --engine mariadb` with DATABASE_URL set to the pod's URL"})
			continue
		}
		client, _ := engines[p.Name].(*postgres.Client)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, podsDoctorPodTimeout)
			defer cancel()
			rep, err := pgops.Doctor(pctx, pool, pgops.DoctorConfig{Engine: client})
			if err != nil {
				add(health.Finding{Check: p.Name + ": reachable", Severity: health.SeverityCritical,
					Message: fmt.Sprintf("pod %s could not be checked: %v", p.Name, err),
					Meaning: "its shops are answered 503 while it is down; this report says nothing about it",
					Action:  "holdfast pods status --pods-config …; bring the pod's database back"})
				return
			}
			for i := range rep.Findings {
				rep.Findings[i].Check = p.Name + ": " + rep.Findings[i].Check
			}
			add(rep.Findings...)
		}()
	}
	wg.Wait()
	rank := map[health.Severity]int{health.SeverityCritical: 0, health.SeverityWarn: 1, health.SeverityOK: 2}
	sort.SliceStable(out.Findings, func(i, j int) bool {
		a, b := out.Findings[i], out.Findings[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		return a.Check < b.Check
	})
	return out, nil
}

func newPodsDoctorCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "doctor", Short: "run the doctor on every pod, findings prefixed with the pod (exit 2 on critical findings, an unreachable pod included)", Args: noArgs}
	fs := cmd.Flags()
	path := fs.String("pods-config", "", "the pods configuration file (as serve takes it)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		pf, _, err := loadPodsFile(*path)
		if err != nil {
			return err
		}
		set, err := openPodsPartial(ctx, pf)
		if err != nil {
			return err
		}
		defer set.Close()
		rep, err := set.doctor(ctx)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			if err := writeIndented(out, rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(out, strings.Replace(rep.Text(), "holdfast doctor: database", "holdfast pods doctor:", 1))
		}
		if n := rep.Count(health.SeverityCritical); n > 0 {
			return &exitError{code: 2, msg: fmt.Sprintf("%d critical findings", n)}
		}
		return nil
	}
	return cmd
}

// openPodsPartial opens the PostgreSQL pods for the doctor: a pool each
// (pgxpool connects lazily), and an engine where one can be made. A pod
// that cannot be reached keeps its pool, so the doctor reports it as
// unreachable instead of refusing to run.
func openPodsPartial(ctx context.Context, pf *podsFile) (*podSet, error) {
	set := &podSet{file: pf, pgPools: map[string]*pgxpool.Pool{}}
	for _, p := range pf.Pods {
		if p.Engine != enginePostgres {
			continue
		}
		u, err := p.url("pod " + p.Name)
		if err != nil {
			set.Close()
			return nil, err
		}
		pool, err := pgPool(ctx, u, 4, "holdfast-pods-doctor")
		if err != nil {
			set.Close()
			return nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		set.closers = append(set.closers, pool.Close)
		set.pgPools[p.Name] = pool
		if c, err := postgres.New(pool, holdfast.Config{}); err == nil {
			set.pods = append(set.pods, pods.Pod{Name: p.Name, Engine: c})
		}
	}
	return set, nil
}
