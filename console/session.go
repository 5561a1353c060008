package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// CookieName is the console's session cookie: "<key id>.<expiry unix
// seconds>.<HMAC-SHA256 of both>", HttpOnly, SameSite=Strict, Path
// /console. It carries no key, only which key logged in and until when.
const CookieName = "holdfast_console"

func randomSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

func (c *Console) sign(payload string) string {
	m := hmac.New(sha256.New, c.cfg.Secret)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// session makes a cookie value for key id, valid until exp.
func (c *Console) session(id int64, exp time.Time) string {
	p := strconv.FormatInt(id, 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	return p + "." + c.sign(p)
}

// verify returns the key id of a well-signed, unexpired cookie value.
func (c *Console) verify(v string, now time.Time) (int64, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0, false
	}
	want := c.sign(parts[0] + "." + parts[1])
	if !hmac.Equal([]byte(want), []byte(parts[2])) {
		return 0, false
	}
	id, err1 := strconv.ParseInt(parts[0], 10, 64)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 || now.Unix() >= exp {
		return 0, false
	}
	return id, true
}

var errLogin = &pageError{status: http.StatusUnauthorized, msg: "log in with an admin API key"}

// principal is the admin key behind the request: its session cookie, or
// an Authorization: Bearer admin key.
func (c *Console) principal(r *http.Request) (int64, error) {
	ctx := r.Context()
	if scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		id, admin, err := c.cfg.Authenticate(ctx, strings.TrimSpace(key))
		if err != nil {
			return 0, errLogin
		}
		if !admin {
			return 0, &pageError{status: http.StatusForbidden, msg: "the console needs an admin key"}
		}
		return id, nil
	}
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return 0, errLogin
	}
	id, ok := c.verify(ck.Value, time.Now())
	if !ok {
		return 0, errLogin
	}
	live, err := c.cfg.AdminLive(ctx, id)
	if err != nil {
		return 0, err
	}
	if !live {
		return 0, errLogin // revoked or expired since the login
	}
	return id, nil
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", map[string]any{"Title": "Log in"})
}

// login checks the typed key and, for a live admin key, sets the session
// cookie. A wrong key gets the form again with 401 and no cookie.
// KeyRefusedError is Config.Authenticate's answer for a key that is not
// let in: Message says why (malformed, unknown to this database, expired,
// revoked) in words the login page shows. Any other error is the key
// store's failure, answered 503.
type KeyRefusedError struct{ Message string }

func (e *KeyRefusedError) Error() string { return e.Message }

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	fail := func(status int, msg string) {
		c.render(w, r, status, "login", map[string]any{"Title": "Log in", "Error": msg})
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "the login form could not be read")
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	switch {
	case key == "":
		fail(http.StatusBadRequest, "key: enter an admin API key")
		return
	case len(key) > keyMaxLen:
		fail(http.StatusBadRequest, fmt.Sprintf("key: at most %d characters", keyMaxLen))
		return
	}
	id, admin, err := c.cfg.Authenticate(r.Context(), key)
	if err != nil {
		var refused *KeyRefusedError
		if errors.As(err, &refused) {
			fail(http.StatusUnauthorized, "key: "+refused.Message)
		} else {
			fail(http.StatusServiceUnavailable, "the key could not be checked (the database did not answer); try again")
		}
		return
	}
	if !admin {
		fail(http.StatusForbidden, "key: the console needs an admin key (this key reaches one shop)")
		return
	}
	exp := time.Now().Add(c.cfg.SessionTTL)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: c.session(id, exp), Path: Prefix, Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
