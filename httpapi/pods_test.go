package httpapi_test

import (
	"strings"
	"testing"
)

// TestPodsRoutesOff: without pods (serve without --pods-config) the pods
// admin routes answer 404 pods_off to an admin key, naming the flag, and
// still 401/403 to others. (The routes over pods: cmd/holdfast's
// TestPodsMoveHTTP.)
func TestPodsRoutesOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.expect(req{method: "GET", path: "/v1/admin/pods", key: "-"}, 401, "unauthorized")
	e.expect(req{method: "POST", path: "/v1/admin/pods/moves", key: "shop1", body: `{"shop":1,"to":"b"}`}, 403, "forbidden")
	for _, r := range []req{
		{method: "GET", path: "/v1/admin/pods"},
		{method: "GET", path: "/v1/admin/pods/shops/1"},
		{method: "POST", path: "/v1/admin/pods/moves", body: `{"shop":1,"to":"b"}`},
		{method: "GET", path: "/v1/admin/pods/moves"},
		{method: "GET", path: "/v1/admin/pods/moves/1"},
		{method: "POST", path: "/v1/admin/pods/shops/1/abort"},
	} {
		if res := e.expect(r, 404, "pods_off"); !strings.Contains(res.errMember("message"), "--pods-config") {
			t.Errorf("%s %s: %s", r.method, r.path, res.body)
		}
	}
}
