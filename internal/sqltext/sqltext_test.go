package sqltext_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/holdfast/holdfast/internal/sqltext"
)

// TestCommentText pins the text the engines send: the form the doctor, top,
// the tracer and operators' own pg_stat_statements queries read.
func TestCommentText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ route, tag, want string }{
		{"reserve", "", "/* app='holdfast',route='reserve' */ "},
		{"claim", "checkout:pay-1.v2_x", "/* app='holdfast',route='claim',tag='checkout:pay-1.v2_x' */ "},
		{"ops", "", "/* app='holdfast',route='ops' */ "},
	} {
		if got := sqltext.Prefix(c.route, c.tag); got != c.want {
			t.Errorf("Prefix(%q, %q) = %q, want %q", c.route, c.tag, got, c.want)
		}
	}
}

// TestCommentRoundTrip writes comments with hostile values and reads them
// back: a value must come back whole and must never end the quote, the
// comment or the line it is written in.
func TestCommentRoundTrip(t *testing.T) {
	t.Parallel()
	hostile := []string{
		"checkout",
		"it's",
		`a"b`,
		"x*/ DROP TABLE holds; /*",
		"*/",
		"line\nbreak\r\n--",
		"a,route='admin'",
		"k=v",
		"100%",
		"%2A%2F",
		"caf\u00e9 \u2603",
		"\x00\x7f",
		"-- ",
		"/*",
	}
	for _, v := range hostile {
		for _, c := range []sqltext.Comment{
			{App: sqltext.App, Route: "reserve", Tag: v},
			{App: sqltext.App, Route: v},
			{App: v, Route: "r", Tag: v},
		} {
			text := c.String()
			body := strings.TrimSuffix(strings.TrimPrefix(text, "/* "), " */")
			if strings.Contains(body, "*/") || strings.Contains(body, "/*") || strings.ContainsAny(body, "\r\n\x00") {
				t.Errorf("%+v written as %q: the value escapes its comment", c, text)
			}
			if n := strings.Count(body, "'"); n != 2*count(c) {
				t.Errorf("%+v written as %q: %d quotes, want %d", c, text, n, 2*count(c))
			}
			for _, q := range []string{text + " SELECT 1", "  " + text + "\nUPDATE holds", "SELECT 1 " + text + ";"} {
				if got := sqltext.Parse(q); got != c {
					t.Errorf("Parse(%q) = %+v, want %+v", q, got, c)
				}
			}
		}
	}
}

func count(c sqltext.Comment) int {
	n := 0
	for _, v := range []string{c.App, c.Route, c.Tag} {
		if v != "" {
			n++
		}
	}
	return n
}

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		q    string
		want sqltext.Comment
	}{
		{"/* app='holdfast',route='reserve' */ SELECT 1", sqltext.Comment{App: "holdfast", Route: "reserve"}},
		{"  /* app='holdfast',route='claim',tag='checkout:pay' */\nUPDATE holds", sqltext.Comment{App: "holdfast", Route: "claim", Tag: "checkout:pay"}},
		{"SELECT 1 /*controller='orders',action='create'*/;", sqltext.Comment{Route: "orders"}},
		{"SELECT 1 /*route='x', tag = 'y'*/", sqltext.Comment{Route: "x", Tag: "y"}},
		{"SELECT 1 /*application='shop%20web',route='a%2Fb'*/", sqltext.Comment{App: "shop web", Route: "a/b"}},
		{"/* route='bad%zz%' */ SELECT 1", sqltext.Comment{Route: "bad%zz%"}},
		{"/* tag='" + strings.Repeat("t", 80) + "' */ SELECT 1", sqltext.Comment{Tag: strings.Repeat("t", sqltext.ValueMax)}},
		{"SELECT 1", sqltext.Comment{}},
		{"/* unterminated SELECT 1", sqltext.Comment{}},
		{"", sqltext.Comment{}},
	}
	for _, c := range cases {
		if got := sqltext.Parse(c.q); got != c.want {
			t.Errorf("Parse(%q) = %+v, want %+v", c.q, got, c.want)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"sql/a.sql":     {Data: []byte("SELECT 1\n")},
		"sql/b_c.sql":   {Data: []byte("SELECT 2")},
		"sql/README.md": {Data: []byte("not a statement")},
		"sql/sub/d.sql": {Data: []byte("SELECT 4")},
		"other/e.sql":   {Data: []byte("SELECT 5")},
	}
	f := sqltext.Load("test", fsys, "sql")
	if got := f.Get("a"); got != "SELECT 1\n" {
		t.Errorf("Get(a) = %q", got)
	}
	if got := f.Tagged("webhooks", "b_c"); got != "/* app='holdfast',route='webhooks' */ SELECT 2" {
		t.Errorf("Tagged(webhooks, b_c) = %q", got)
	}
	if got := len(f.Map()); got != 2 {
		t.Errorf("Load kept %d files, want 2 (a, b_c): %v", got, f.Map())
	}
	mustPanic(t, "test: no statement e", func() { f.Get("e") })
	mustPanic(t, "test: reading embedded SQL", func() { sqltext.Load("test", fsys, "missing") })
}

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.HasPrefix(s, want) {
			t.Errorf("panic %v, want one starting %q", r, want)
		}
	}()
	fn()
}
