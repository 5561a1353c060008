package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/holdfast/holdfast/console"
	"github.com/holdfast/holdfast/health"
)

// ConsoleConfig configures the operator console (package console) that the
// server mounts at /console when it has a Store (for the API keys). The
// zero value serves it with its defaults.
type ConsoleConfig struct {
	// Off leaves the console out: /console answers 404 route_not_found.
	Off bool
	// Secret signs its session cookies. Defaults to random bytes per
	// process: a restart ends every session, and sessions do not carry
	// from one replica to another.
	Secret []byte
	// SessionTTL is how long a login lasts (console.SessionTTLDefault).
	SessionTTL time.Duration
	// ChartInterval is the interval each point of its charts stands for
	// (console.ChartIntervalDefault).
	ChartInterval time.Duration
	// Doctor runs the doctor for its doctor page. Defaults to the Store's
	// Doctor method when it has one (pgstore's); else the page is off.
	Doctor func(ctx context.Context) (*health.Report, error)
}

// consoleRoutes mounts the console.
func (s *Server) consoleRoutes() error {
	cc := s.cfg.Console
	if cc.Off || s.store == nil {
		return nil
	}
	store := s.store
	doctor := cc.Doctor
	if d, ok := store.(interface {
		Doctor(ctx context.Context) (*health.Report, error)
	}); ok && doctor == nil {
		doctor = d.Doctor
	}
	con, err := console.New(console.Config{
		// The event feed's head is read where the engine's events live:
		// the engine's database, the Store's.
		EventsHead: store.EventsHead,
		Webhooks:   s.registry().List,
		Engine:     s.eng,
		Authenticate: func(ctx context.Context, key string) (int64, bool, error) {
			p, err := s.auth.authenticate(ctx, key)
			if bad := (*badKeyError)(nil); errors.As(err, &bad) {
				// As for the API: the log says why, with the key's id.
				s.log.Info("console login refused", "key_refused", bad.reason, "key_id", bad.keyID)
				return 0, false, &console.KeyRefusedError{Message: refusedKey(bad).Message}
			}
			return p.keyID, p.admin, err
		},
		AdminLive:     store.AdminLive,
		Shops:         store.Shops,
		Doctor:        doctor,
		Shadow:        s.cfg.Shadow,
		Secret:        cc.Secret,
		SessionTTL:    cc.SessionTTL,
		ChartInterval: cc.ChartInterval,
		Logger:        s.log,
	})
	if err != nil {
		return err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
			info.route = "console"
		}
		con.ServeHTTP(w, r)
	})
	s.mux.Handle(console.Prefix+"/", h)
	s.mux.Handle("GET "+console.Prefix, http.RedirectHandler(console.Prefix+"/", http.StatusSeeOther))
	s.console = con
	return nil
}

// observeConsole gives the console's charts each answer of the reserve
// route, with its shop (0 when the request was refused before its shop
// was known).
func (s *Server) observeConsole(info *reqInfo, status int, d time.Duration) {
	if s.console != nil && info.route == routeReserve {
		s.console.Observe(info.shop, status, d)
	}
}
