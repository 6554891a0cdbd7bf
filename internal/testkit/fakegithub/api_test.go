package fakegithub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"sortie/internal/testkit/fakegithub"
)

// response is what a raw request to the fake got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

// get sends GET path (under the fake's URL, or a whole URL) with the token and the
// headers GitHub asks for, plus hdr (name, value pairs), and does not follow redirects.
func get(t *testing.T, f *fakegithub.Server, path string, hdr ...string) response {
	t.Helper()
	url := path
	if len(path) > 0 && path[0] == '/' {
		url = f.URL() + path
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fakegithub.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("User-Agent", "fakegithub-test")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// getJSON GETs path, requires a 200 and decodes the body into a T.
func getJSON[T any](t *testing.T, f *fakegithub.Server, path string) (T, response) {
	t.Helper()
	var v T
	r := get(t, f, path)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s, want 200", path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("GET %s: decoding %s: %v", path, r.body, err)
	}
	return v, r
}

// keys are the top-level keys of a JSON object, to check a shape has GitHub's fields.
func keys(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return m
}

// requireKeys fails when obj lacks any of names.
func requireKeys(t *testing.T, what string, obj map[string]json.RawMessage, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := obj[n]; !ok {
			t.Errorf("%s has no %q key; it has %v", what, n, sortedKeys(obj))
		}
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// revalidate checks the conditional-request cycle on path: a re-fetch with the ETag is
// 304 and not charged; after change, the same request is 200 with a new ETag.
func revalidate(t *testing.T, f *fakegithub.Server, path string, change func()) {
	t.Helper()
	first := get(t, f, path)
	etag := first.header.Get("ETag")
	if first.status != http.StatusOK || etag == "" {
		t.Fatalf("GET %s: %d with ETag %q, want 200 with one", path, first.status, etag)
	}
	before := f.Counts()
	if r := get(t, f, path, "If-None-Match", etag); r.status != http.StatusNotModified {
		t.Fatalf("GET %s with its ETag, nothing changed: %d, want 304", path, r.status)
	}
	if c := f.Counts(); c.Charged != before.Charged || c.NotModified != before.NotModified+1 {
		t.Errorf("GET %s answered 304: counts went from %+v to %+v, want one more 304 and nothing charged", path, before, c)
	}
	change()
	r := get(t, f, path, "If-None-Match", etag)
	if r.status != http.StatusOK || r.header.Get("ETag") == etag {
		t.Errorf("GET %s with the old ETag after a change: %d with ETag %q, want 200 with a new ETag", path, r.status, r.header.Get("ETag"))
	}
}

// itemKeys are the top-level keys of the first object of a JSON array.
func itemKeys(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil || len(items) == 0 {
		t.Fatalf("decoding %s as a non-empty array: %v", body, err)
	}
	return items[0]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
