package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast/httpapi"
)

// spec is the embedded OpenAPI document, decoded once.
var spec = sync.OnceValue(func() map[string]any {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(httpapi.OpenAPI()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		panic("openapi.json: " + err.Error())
	}
	return doc
})

// checkResponse validates a real response against the OpenAPI document: the
// route and method must be documented, the status must be documented for
// them, and the body must match its schema. Unknown routes and methods must
// be 404 and 405 with an Error body.
func checkResponse(method, path string, status int, contentType string, body []byte) error {
	doc := spec()
	tmpl, op := findOperation(doc, method, path)
	var schema any
	if op == nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s is not in the document, yet answered %d", method, path, status)
		}
		schema = map[string]any{"$ref": "#/components/schemas/Error"}
	} else {
		responses := op["responses"].(map[string]any)
		resp, ok := responses[strconv.Itoa(status)]
		if !ok {
			return fmt.Errorf("%s %s: status %d is not documented (documented: %v)", method, tmpl, status, keys(responses))
		}
		r := resolve(doc, resp).(map[string]any)
		content, _ := r["content"].(map[string]any)
		mt := strings.TrimSpace(strings.Split(contentType, ";")[0])
		media, ok := content[mt]
		if !ok {
			return fmt.Errorf("%s %s %d: content type %q not documented (%v)", method, tmpl, status, contentType, keys(content))
		}
		schema = media.(map[string]any)["schema"]
		if mt != "application/json" {
			return nil
		}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s %s %d: body is not JSON: %v", method, path, status, err)
	}
	if err := validate(doc, schema, v, "$"); err != nil {
		return fmt.Errorf("%s %s %d: %v\nbody: %s", method, tmpl, status, err, body)
	}
	return nil
}

// checkRequest validates a request body the server accepted against the
// operation's requestBody schema.
func checkRequest(method, path string, body []byte) error {
	doc := spec()
	tmpl, op := findOperation(doc, method, path)
	if op == nil || len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	rb, ok := op["requestBody"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s accepted a body but documents none", method, tmpl)
	}
	schema := rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if err := validate(doc, schema, v, "$"); err != nil {
		return fmt.Errorf("accepted request body of %s %s does not match its schema: %v", method, tmpl, err)
	}
	return nil
}

func findOperation(doc map[string]any, method, path string) (string, map[string]any) {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(path, "/")
	// The most literal template wins, as in net/http's mux
	// (…/webhooks/dead-letters over …/webhooks/{webhook_id}).
	best, bestParams := "", len(segs)+1
	for tmpl := range doc["paths"].(map[string]any) {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) || !matches(ts, segs) {
			continue
		}
		if n := strings.Count(tmpl, "{"); n < bestParams {
			best, bestParams = tmpl, n
		}
	}
	if best == "" {
		return "", nil
	}
	op, ok := doc["paths"].(map[string]any)[best].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		return best, nil
	}
	return best, op
}

func matches(tmpl, segs []string) bool {
	for i, t := range tmpl {
		if !strings.HasPrefix(t, "{") && t != segs[i] {
			return false
		}
	}
	return true
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func resolve(doc map[string]any, node any) any {
	for {
		m, ok := node.(map[string]any)
		if !ok {
			return node
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return node
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		if cur == nil {
			panic("openapi.json: dangling $ref " + ref)
		}
		node = cur
	}
}

// validate checks v against the subset of JSON Schema the document uses:
// type, enum, const, properties, required, additionalProperties, items,
// min/maxItems, minimum, maximum, min/maxLength and the formats uuid,
// date-time and int64.
func validate(doc map[string]any, schemaNode, v any, at string) error {
	s, ok := resolve(doc, schemaNode).(map[string]any)
	if !ok {
		return fmt.Errorf("%s: bad schema %v", at, schemaNode)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(v, t) }) {
			return fmt.Errorf("%s: %v is not of type %v", at, v, types)
		}
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, e)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := v[r]; !ok {
				return fmt.Errorf("%s: required member %q missing", at, r)
			}
		}
		for k, x := range v {
			ps, ok := props[k]
			if !ok {
				if ap, ok := s["additionalProperties"].(bool); ok && !ap {
					return fmt.Errorf("%s: undocumented member %q", at, k)
				}
				continue
			}
			if err := validate(doc, ps, x, at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if n, ok := num(s["minItems"]); ok && float64(len(v)) < n {
			return fmt.Errorf("%s: fewer than %v items", at, n)
		}
		if n, ok := num(s["maxItems"]); ok && float64(len(v)) > n {
			return fmt.Errorf("%s: more than %v items", at, n)
		}
		if items, ok := s["items"]; ok {
			for i, x := range v {
				if err := validate(doc, items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case json.Number:
		f, _ := v.Float64()
		if n, ok := num(s["minimum"]); ok && f < n {
			return fmt.Errorf("%s: %v below minimum %v", at, v, n)
		}
		if n, ok := num(s["maximum"]); ok && f > n {
			return fmt.Errorf("%s: %v above maximum %v", at, v, n)
		}
		if s["format"] == "int64" {
			if _, err := strconv.ParseInt(v.String(), 10, 64); err != nil {
				return fmt.Errorf("%s: %v is not an int64", at, v)
			}
		}
	case string:
		if n, ok := num(s["minLength"]); ok && float64(len(v)) < n {
			return fmt.Errorf("%s: shorter than %v", at, n)
		}
		if n, ok := num(s["maxLength"]); ok && float64(len(v)) > n {
			return fmt.Errorf("%s: longer than %v", at, n)
		}
		switch s["format"] {
		case "uuid":
			if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
				return fmt.Errorf("%s: %q is not a UUID", at, v)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				return fmt.Errorf("%s: %q is not RFC 3339", at, v)
			}
		}
	}
	return nil
}

func isType(v any, t string) bool {
	switch v := v.(type) {
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case json.Number:
		if t == "number" {
			return true
		}
		_, err := strconv.ParseInt(v.String(), 10, 64)
		return t == "integer" && err == nil
	}
	return false
}

func asList(x any) []string {
	var out []string
	l, _ := x.([]any)
	for _, s := range l {
		out = append(out, s.(string))
	}
	return out
}

func num(x any) (float64, bool) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// TestOpenAPIValidator shows the response check can fail: it rejects what
// the document does not allow.
func TestOpenAPIValidator(t *testing.T) {
	t.Parallel()
	hold := `{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","shop_id":1,"status":"held","lines":[{"item_id":7,"location_id":1,"quantity":2}],` +
		`"created_at":"2026-01-01T00:00:00Z","expires_at":"2026-01-01T00:15:00Z","deadline":"2026-01-01T01:00:00Z"}`
	path := "/v1/shops/1/reservations"
	if err := checkResponse("POST", path, 201, "application/json", []byte(hold)); err != nil {
		t.Fatalf("valid hold rejected: %v", err)
	}
	for name, c := range map[string]struct {
		method, path string
		status       int
		body         string
	}{
		"undocumented status": {"POST", path, 204, hold},
		"missing member":      {"POST", path, 201, strings.Replace(hold, `"status":"held",`, "", 1)},
		"undocumented member": {"POST", path, 201, strings.Replace(hold, `"shop_id":1,`, `"shop_id":1,"x":1,`, 1)},
		"bad enum":            {"POST", path, 201, strings.Replace(hold, `"held"`, `"pending"`, 1)},
		"bad date":            {"POST", path, 201, strings.Replace(hold, `2026-01-01T00:15:00Z`, `tomorrow`, 1)},
		"bad uuid":            {"POST", path, 201, strings.Replace(hold, `6f1c2b9e-`, `6f1c2b9e`, 1)},
		"quantity below min":  {"POST", path, 201, strings.Replace(hold, `"quantity":2`, `"quantity":0`, 1)},
		"error without code":  {"POST", path, 409, `{"error":{"message":"x"}}`},
		"unknown error code":  {"POST", path, 409, `{"error":{"code":"oops","message":"x"}}`},
		"undocumented route":  {"GET", "/v2/x", 200, `{}`},
		"404 not an error":    {"GET", "/v2/x", 404, `{"status":"ok"}`},
		"wrong health":        {"GET", "/healthz", 200, `{"status":"bad"}`},
	} {
		if err := checkResponse(c.method, c.path, c.status, "application/json", []byte(c.body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestOpenAPIExamples: every route documents an example of its request body
// and of its success answers, and every example (errors included) matches
// its schema, so the examples cannot drift from the contract.
func TestOpenAPIExamples(t *testing.T) {
	doc := spec()
	checkMedia := func(where string, media map[string]any, required bool) {
		exs, _ := media["examples"].(map[string]any)
		if len(exs) == 0 {
			if required {
				t.Errorf("%s: no examples", where)
			}
			return
		}
		schema := media["schema"]
		for name, e := range exs {
			v := resolve(doc, e).(map[string]any)["value"]
			if s, ok := resolve(doc, schema).(map[string]any); ok && s["type"] == "string" {
				if _, ok := v.(string); !ok {
					t.Errorf("%s example %s: not a string", where, name)
				}
				continue
			}
			if err := validate(doc, schema, v, "$"); err != nil {
				t.Errorf("%s example %s: %v", where, name, err)
			}
		}
	}
	paths := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, o := range item.(map[string]any) {
			op := o.(map[string]any)
			where := strings.ToUpper(method) + " " + path
			if rb, ok := op["requestBody"].(map[string]any); ok {
				for mt, m := range rb["content"].(map[string]any) {
					checkMedia(where+" request "+mt, m.(map[string]any), true)
				}
			}
			for status, r := range op["responses"].(map[string]any) {
				resp := resolve(doc, r).(map[string]any)
				content, _ := resp["content"].(map[string]any)
				for mt, m := range content {
					checkMedia(where+" "+status+" "+mt, m.(map[string]any), strings.HasPrefix(status, "2"))
				}
			}
		}
	}
}
