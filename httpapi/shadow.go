package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/shadow"
)

// Error codes of the shadow admin routes (/v1/admin/shadow/...).
const (
	CodeShadowOff       = "shadow_off"        // 404: serve runs without the shadow layer (--legacy)
	CodeShopNotEnrolled = "shop_not_enrolled" // 404: the shop is not enrolled in the layer
	CodeModeSkipped     = "mode_skipped"      // 409: modes move one step forward, or back to legacy
	CodeShopWarming     = "shop_warming"      // 409: shadow → primary before the shop's warming ends
	CodeNothingReady    = "nothing_ready"     // 409: promote-next found no shop ready
)

// ShadowReasonMaxLen bounds the reason of a mode change (the audit trail).
const ShadowReasonMaxLen = holdfast.ReasonMaxLen

// Route names of the shadow admin routes.
const (
	routeShadowReport    = "shadow_report"
	routeShadowPlan      = "shadow_plan"
	routeShadowSetMode   = "shadow_set_mode"
	routeShadowPromote   = "shadow_promote_next"
	routeShadowRevert    = "shadow_revert"
	routeShadowRevertAll = "shadow_revert_all"
)

// shadowRoutes registers the operator's routes of the shadow layer
// (docs/MIGRATION.md). They need an admin key; without a layer
// (Config.Shadow) they answer 404 shadow_off.
func (s *Server) shadowRoutes() {
	const base = "/v1/admin/shadow"
	s.admin("GET "+base+"/report", routeShadowReport, routeOpts{}, s.shadowReport)
	s.admin("GET "+base+"/plan", routeShadowPlan, routeOpts{}, s.shadowPlan)
	s.admin("PUT "+base+"/shops/{shop_id}/mode", routeShadowSetMode, routeOpts{body: true}, s.shadowSetMode)
	s.admin("POST "+base+"/promote-next", routeShadowPromote, routeOpts{optional: true}, s.shadowPromoteNext)
	s.admin("POST "+base+"/shops/{shop_id}/revert", routeShadowRevert, routeOpts{optional: true}, s.shadowRevert)
	s.admin("POST "+base+"/revert-all", routeShadowRevertAll, routeOpts{optional: true}, s.shadowRevertAll)
}

// admin registers an operator route: an admin key, then the shadow layer,
// then the body (as routeOpts says), then fn.
func (s *Server) admin(pattern, route string, o routeOpts, fn handlerFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(infoKey{}).(*reqInfo)
		info.route = route
		timeout, apiErr := s.timeout(r)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		c := &call{s: s, r: r, ctx: holdfast.WithTag(ctx, "http-admin"), route: route}
		var status int
		var body any
		err := s.prepareAdmin(c, info, o)
		if err == nil {
			status, body, err = fn(c)
		}
		if err != nil {
			ae := s.apiErrorOf(route, err)
			if ae.Status >= 500 && ae.Code != CodeOverloaded {
				s.log.Warn("request failed", "request_id", w.Header().Get("X-Request-Id"), "route", route, "code", ae.Code, "error", err.Error())
			}
			writeError(w, ae)
			return
		}
		writeJSON(w, status, body)
	})
}

// prepareAdmin authenticates an admin key, checks the layer is on, and
// reads the body.
func (s *Server) prepareAdmin(c *call, info *reqInfo, o routeOpts) error {
	p, err := s.bearer(c.ctx, c.r)
	if err != nil {
		return err
	}
	info.keyID = p.keyID
	switch {
	case !p.admin && o.pods:
		return &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "the pods admin routes need an admin key (holdfast keys create --admin)"}
	case !p.admin:
		return &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "the shadow admin routes need an admin key (holdfast keys create --admin)"}
	case o.pods && s.cfg.Pods == nil:
		return &apiError{Status: http.StatusNotFound, Code: CodePodsOff,
			Message: "this server does not run over pods: start holdfast serve with --pods-config to move shops across pods"}
	}
	if !o.pods && s.cfg.Shadow == nil {
		return &apiError{Status: http.StatusNotFound, Code: CodeShadowOff,
			Message: "the shadow layer is off: start holdfast serve with --legacy redis://… (HOLDFAST_LEGACY) to put it in front of the legacy store"}
	}
	if v := c.r.PathValue("shop_id"); v != "" {
		shop, apiErr := parseID("shop_id", v)
		if apiErr != nil {
			return apiErr
		}
		info.shop, c.shop = shop, shop
	}
	r := c.r
	if (!o.body && !o.optional) || (o.optional && r.ContentLength == 0) {
		return nil
	}
	if r.ContentLength > BodyMax {
		return tooLarge()
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 && o.body {
		return nil // parseBody says what the body must hold
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &apiError{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMedia, Field: "Content-Type",
			Message: fmt.Sprintf("Content-Type must be application/json, not %q", ct)}
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, BodyMax))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge()
	}
	if err != nil {
		return badRequest(CodeMalformedJSON, "", "cannot read the body: %v", err)
	}
	c.body = b
	return nil
}

// shadowError translates the layer's refusals into answers; each changed
// nothing.
func shadowError(err error) error {
	var me *shadow.ModeError
	switch {
	case errors.Is(err, shadow.ErrNothingReady):
		return &apiError{Status: http.StatusConflict, Code: CodeNothingReady, Message: "no enrolled shop is ready for its next mode; GET /v1/admin/shadow/plan says why", cause: err}
	case !errors.As(err, &me):
		return err
	case errors.Is(err, shadow.ErrUnknownMode):
		return &apiError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidArgument, Field: "mode",
			Message: fmt.Sprintf("unknown mode %q; modes: legacy, shadow, primary, holdfast", me.Mode)}
	case errors.Is(err, shadow.ErrUnknownShop):
		return &apiError{Status: http.StatusNotFound, Code: CodeShopNotEnrolled, Field: "shop_id",
			Message: fmt.Sprintf("shop %d is not enrolled in the shadow layer", me.Shop)}
	case errors.Is(err, shadow.ErrSkippedMode):
		return &apiError{Status: http.StatusConflict, Code: CodeModeSkipped, Field: "mode", Message: trimShadow(me.Error())}
	case errors.Is(err, shadow.ErrWarming):
		return &apiError{Status: http.StatusConflict, Code: CodeShopWarming, Field: "mode", Message: trimShadow(me.Error())}
	}
	return err
}

func trimShadow(s string) string {
	if len(s) > len("shadow: ") && s[:len("shadow: ")] == "shadow: " {
		return s[len("shadow: "):]
	}
	return s
}

// latencyJSON is one side's latency percentiles in milliseconds (bucket
// upper bounds).
type latencyJSON struct {
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

func toLatencyJSON(l shadow.Latency) latencyJSON {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return latencyJSON{P50Ms: ms(l.P50), P99Ms: ms(l.P99)}
}

// shopReportJSON is a shop's comparison on the wire.
type shopReportJSON struct {
	ShopID        int64            `json:"shop_id"`
	Mode          string           `json:"mode"`
	Warming       bool             `json:"warming"`
	ReadyAt       *time.Time       `json:"ready_at,omitempty"`
	Ops           int64            `json:"ops"`
	Compared      int64            `json:"compared"`
	Agreed        int64            `json:"agreed"`
	AgreementRate float64          `json:"agreement_rate"`
	WarmingOps    int64            `json:"warming_ops"`
	Disagreements map[string]int64 `json:"disagreements"`
	Legacy        latencyJSON      `json:"legacy"`
	Holdfast      latencyJSON      `json:"holdfast"`
}

func toShopReportJSON(r shadow.ShopReport) shopReportJSON {
	out := shopReportJSON{
		ShopID: r.ShopID, Mode: string(r.Mode), Warming: r.Warming, Ops: r.Ops, Compared: r.Compared, Agreed: r.Agreed,
		AgreementRate: r.AgreementRate, WarmingOps: r.WarmingOps, Disagreements: r.Disagreements,
		Legacy: toLatencyJSON(r.Legacy), Holdfast: toLatencyJSON(r.Holdfast),
	}
	if out.Disagreements == nil {
		out.Disagreements = map[string]int64{}
	}
	if !r.ReadyAt.IsZero() {
		t := r.ReadyAt.UTC()
		out.ReadyAt = &t
	}
	return out
}

// planEntryJSON is a shop of the ramp on the wire.
type planEntryJSON struct {
	shopReportJSON
	Next  string `json:"next,omitempty"`
	Ready bool   `json:"ready"`
	Why   string `json:"why"`
}

func toPlanEntryJSON(p shadow.PlanEntry) planEntryJSON {
	return planEntryJSON{shopReportJSON: toShopReportJSON(p.ShopReport), Next: string(p.Next), Ready: p.Ready, Why: p.Why}
}

// shopModeJSON is a shop's mode on the wire.
type shopModeJSON struct {
	ShopID      int64      `json:"shop_id"`
	Mode        string     `json:"mode"`
	ShadowSince *time.Time `json:"shadow_since,omitempty"`
	ChangedAt   time.Time  `json:"changed_at"`
}

// shopMode is the shop's mode as this replica holds it after a change.
func shopMode(sh *shadow.Engine, shop int64) (shopModeJSON, error) {
	for _, m := range sh.ShopModes() {
		if m.ShopID == shop {
			out := shopModeJSON{ShopID: m.ShopID, Mode: string(m.Mode), ChangedAt: m.ChangedAt.UTC()}
			if !m.ShadowSince.IsZero() {
				t := m.ShadowSince.UTC()
				out.ShadowSince = &t
			}
			return out, nil
		}
	}
	return shopModeJSON{}, shadowError(&shadow.ModeError{Err: shadow.ErrUnknownShop, Shop: shop})
}

type shopsJSON[T any] struct {
	Shops []T `json:"shops"`
}

func (s *Server) shadowReport(c *call) (int, any, error) {
	reps, err := s.cfg.Shadow.Report(c.ctx)
	if err != nil {
		return 0, nil, err
	}
	out := shopsJSON[shopReportJSON]{Shops: make([]shopReportJSON, 0, len(reps))}
	for _, r := range reps {
		out.Shops = append(out.Shops, toShopReportJSON(r))
	}
	return http.StatusOK, out, nil
}

// Bounds of the ramp thresholds a caller may pass.
const shadowComparedMax = 1 << 40

// thresholdsFromQuery reads the plan's thresholds from the query string:
// until, agreement_min, compared_min. Absent ones take the layer's
// defaults.
func thresholdsFromQuery(r *http.Request) (shadow.Thresholds, error) {
	q := r.URL.Query()
	var th shadow.Thresholds
	for name := range q {
		switch name {
		case "until", "agreement_min", "compared_min", "p99_ratio_max", "p99_max_ms":
		default:
			return th, badRequest(CodeUnknownField, name, "unknown query parameter %q; allowed: %s", name, thresholdNames)
		}
	}
	if v := q.Get("until"); v != "" {
		m, err := shadow.ParseMode(v)
		if err != nil {
			return th, invalid("until", "unknown mode %q; modes: legacy, shadow, primary, holdfast", v)
		}
		th.Until = m
	}
	if v := q.Get("agreement_min"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return th, badRequest(CodeWrongType, "agreement_min", "agreement_min must be a number such as 0.999, not %q", v)
		}
		if !(f > 0 && f <= 1) {
			return th, invalid("agreement_min", "must be above 0 and at most 1")
		}
		th.AgreementMin = f
	}
	if v := q.Get("compared_min"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return th, badRequest(CodeWrongType, "compared_min", "compared_min must be an integer, not %q", v)
		}
		if n < 1 || n > shadowComparedMax {
			return th, invalid("compared_min", "must be between 1 and %d", int64(shadowComparedMax))
		}
		th.ComparedMin = n
	}
	for _, name := range []string{"p99_ratio_max", "p99_max_ms"} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return th, badRequest(CodeWrongType, name, "%s must be a number, not %q", name, v)
		}
		if err := setP99(&th, name, f); err != nil {
			return th, err
		}
	}
	return th, nil
}

// thresholdNames are the thresholds a caller may pass.
const thresholdNames = "until, agreement_min, compared_min, p99_ratio_max, p99_max_ms"

// shadowP99Max bounds p99_ratio_max and p99_max_ms.
const shadowP99Max = 1e9

// setP99 sets a latency threshold: p99_ratio_max (holdfast's p99 against
// the legacy's) or p99_max_ms (holdfast's p99, absolute).
func setP99(th *shadow.Thresholds, name string, f float64) *apiError {
	if !(f > 0 && f <= shadowP99Max) {
		return invalid(name, "must be above 0 and at most %g", shadowP99Max)
	}
	if name == "p99_ratio_max" {
		th.P99RatioMax = f
	} else {
		th.P99Max = time.Duration(f * float64(time.Millisecond))
	}
	return nil
}

// thresholdsFromBody reads {"until", "agreement_min", "compared_min",
// "p99_ratio_max", "p99_max_ms"}, all optional; an absent or empty body
// takes the layer's defaults.
func thresholdsFromBody(body []byte) (shadow.Thresholds, error) {
	var th shadow.Thresholds
	if len(bytes.TrimSpace(body)) == 0 {
		return th, nil
	}
	o, apiErr := parseBody(body, "until", "agreement_min", "compared_min", "p99_ratio_max", "p99_max_ms")
	if apiErr != nil {
		return th, apiErr
	}
	until, apiErr := o.string("until", false, 16)
	if apiErr != nil {
		return th, apiErr
	}
	if until != "" {
		m, err := shadow.ParseMode(until)
		if err != nil {
			return th, invalid("until", "unknown mode %q; modes: legacy, shadow, primary, holdfast", until)
		}
		th.Until = m
	}
	if f, ok, apiErr := o.number("agreement_min"); apiErr != nil {
		return th, apiErr
	} else if ok {
		if !(f > 0 && f <= 1) {
			return th, invalid("agreement_min", "must be above 0 and at most 1")
		}
		th.AgreementMin = f
	}
	for _, name := range []string{"p99_ratio_max", "p99_max_ms"} {
		if f, ok, apiErr := o.number(name); apiErr != nil {
			return th, apiErr
		} else if ok {
			if apiErr := setP99(&th, name, f); apiErr != nil {
				return th, apiErr
			}
		}
	}
	n, ok, apiErr := o.int64("compared_min", false, 1, shadowComparedMax)
	if apiErr != nil {
		return th, apiErr
	}
	if ok {
		th.ComparedMin = n
	}
	return th, nil
}

// number reads an optional JSON number member.
func (o *object) number(name string) (float64, bool, *apiError) {
	raw, _ := o.raw(name, false)
	if raw == nil {
		return 0, false, nil
	}
	var f float64
	if jsonType(raw) != "a number" || json.Unmarshal(raw, &f) != nil {
		return 0, false, badRequest(CodeWrongType, o.prefix+name, "%s must be a number, not %s", o.prefix+name, jsonType(raw))
	}
	return f, true, nil
}

func (s *Server) shadowPlan(c *call) (int, any, error) {
	th, err := thresholdsFromQuery(c.r)
	if err != nil {
		return 0, nil, err
	}
	plan, err := s.cfg.Shadow.Plan(c.ctx, th)
	if err != nil {
		return 0, nil, shadowError(err)
	}
	out := shopsJSON[planEntryJSON]{Shops: make([]planEntryJSON, 0, len(plan))}
	for _, p := range plan {
		out.Shops = append(out.Shops, toPlanEntryJSON(p))
	}
	return http.StatusOK, out, nil
}

func (s *Server) shadowSetMode(c *call) (int, any, error) {
	o, apiErr := parseBody(c.body, "mode", "reason")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	mode, apiErr := o.string("mode", true, 16)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	reason, apiErr := o.string("reason", false, ShadowReasonMaxLen)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	m, err := shadow.ParseMode(mode)
	if err != nil {
		return 0, nil, shadowError(err)
	}
	if reason == "" {
		reason = "admin api"
	}
	if err := s.cfg.Shadow.SetMode(c.ctx, c.shop, m, reason); err != nil {
		return 0, nil, shadowError(err)
	}
	out, err := shopMode(s.cfg.Shadow, c.shop)
	return http.StatusOK, out, err
}

func (s *Server) shadowPromoteNext(c *call) (int, any, error) {
	th, err := thresholdsFromBody(c.body)
	if err != nil {
		return 0, nil, err
	}
	p, err := s.cfg.Shadow.PromoteNext(c.ctx, th)
	if err != nil {
		return 0, nil, shadowError(err)
	}
	return http.StatusOK, toPlanEntryJSON(*p), nil
}

func (s *Server) shadowRevert(c *call) (int, any, error) {
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	if err := s.cfg.Shadow.Revert(c.ctx, c.shop); err != nil {
		return 0, nil, shadowError(err)
	}
	out, err := shopMode(s.cfg.Shadow, c.shop)
	return http.StatusOK, out, err
}

// revertedJSON is revert-all's answer: the shops it moved back to legacy.
type revertedJSON struct {
	Reverted []int64 `json:"reverted"`
}

func (s *Server) shadowRevertAll(c *call) (int, any, error) {
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	done, err := s.cfg.Shadow.RevertAll(c.ctx)
	if err != nil {
		// Some shops may be back on legacy already: say which.
		return 0, nil, fmt.Errorf("revert-all stopped after reverting shops %v: %w", done, shadowError(err))
	}
	if done == nil {
		done = []int64{}
	}
	return http.StatusOK, revertedJSON{Reverted: done}, nil
}
