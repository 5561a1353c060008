package pods

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// routerStats are the router's counters, exported by Collectors.
type routerStats struct {
	hits, misses, stale atomic.Int64
	followErrors        atomic.Int64
	moved               atomic.Int64 // answers ErrShopMoved
}

// Collectors are the router's Prometheus metrics, to register:
// holdfast_pod_up{pod} (1 up, 0 down: its shops are turned away),
// holdfast_pod_refused_total{pod}, holdfast_pods_map_lookups_total{result}
// (hit, miss: read from the map, stale: the map could not be read and a
// cached placement past its TTL was used) and holdfast_pods_cache_entries.
func (r *Router) Collectors() []prometheus.Collector {
	var cs []prometheus.Collector
	for _, p := range r.order {
		labels := prometheus.Labels{"pod": p.name}
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "holdfast_pod_up", Help: "1 when the pod is up, 0 while its breaker turns its shops away.", ConstLabels: labels},
				func() float64 {
					if p.down.Load() {
						return 0
					}
					return 1
				}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "holdfast_pod_refused_total", Help: "Calls turned away because their pod was down.", ConstLabels: labels},
				func() float64 { return float64(p.refused.Load()) }))
	}
	for result, c := range map[string]*atomic.Int64{"hit": &r.stats.hits, "miss": &r.stats.misses, "stale": &r.stats.stale} {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "holdfast_pods_map_lookups_total", Help: "Placements looked up, by where the answer came from.",
			ConstLabels: prometheus.Labels{"result": result}}, func() float64 { return float64(c.Load()) }))
	}
	cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "holdfast_pods_shop_moved_total", Help: "Answers that a shop is fenced or moved away (the placement is then read again)."},
		func() float64 { return float64(r.stats.moved.Load()) }))
	cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "holdfast_pods_map_follow_errors_total", Help: "Reads of the map's recent changes that failed (the cache then relies on its TTL)."},
		func() float64 { return float64(r.stats.followErrors.Load()) }))
	cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "holdfast_pods_cache_entries", Help: "Placements in the router's cache."},
		func() float64 { return float64(r.cache.len()) }))
	return cs
}
