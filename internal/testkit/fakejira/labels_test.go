package fakejira_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"sortie/internal/testkit/fakejira"
)

// put sends PUT /rest/api/N/issue/{ref} with body, authorised as the adapter is.
func put(t *testing.T, f *fakejira.Server, api fakejira.API, ref, body string) (int, string) {
	t.Helper()
	path := "/rest/api/3/issue/"
	if api == fakejira.DataCenter {
		path = "/rest/api/2/issue/"
	}
	req, err := http.NewRequest(http.MethodPut, f.URL()+path+ref, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if api == fakejira.Cloud {
		user, pass, _ := strings.Cut(fakejira.CloudKey, ":")
		req.SetBasicAuth(user, pass)
	} else {
		req.Header.Set("Authorization", "Bearer "+fakejira.DataCenterKey)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEditLabels_AsJiraDoes: PUT /issue/{ref} adds, removes and sets labels, answers 204,
// and refuses what Jira refuses with errors.labels.
func TestEditLabels_AsJiraDoes(t *testing.T) {
	for _, fl := range flavours {
		t.Run(fl.name, func(t *testing.T) {
			f := fakejira.New(t, fl.api)
			f.AddIssue("10001", "PROJ-1", "To Do")
			f.SetField("PROJ-1", "labels", []string{"backend"})
			steps := []struct {
				body   string
				status int
				want   []string
				says   string
			}{
				{`{"update": {"labels": [{"add": "needs-human"}]}}`, 204, []string{"backend", "needs-human"}, ""},
				{`{"update": {"labels": [{"add": "needs-human"}]}}`, 204, []string{"backend", "needs-human"}, ""},
				{`{"update": {"labels": [{"add": "needs human"}]}}`, 400, []string{"backend", "needs-human"}, "contains spaces"},
				{`{"update": {"labels": [{"add": "` + strings.Repeat("x", 256) + `"}]}}`, 400, []string{"backend", "needs-human"}, "255"},
				{`{"update": {"labels": [{"remove": "backend"}, {"add": "Backend"}]}}`, 204, []string{"needs-human", "Backend"}, ""},
				{`{"update": {"summary": [{"set": "x"}]}}`, 400, []string{"needs-human", "Backend"}, "not on the appropriate screen"},
				{`{"fields": {"labels": []}}`, 204, []string{}, ""},
			}
			for i, st := range steps {
				status, body := put(t, f, fl.api, "PROJ-1", st.body)
				if status != st.status || !strings.Contains(body, st.says) {
					t.Fatalf("step %d %s: %d %s, want %d saying %q", i, st.body, status, body, st.status, st.says)
				}
				if got, _ := f.Labels("10001"); !slices.Equal(got, st.want) {
					t.Fatalf("step %d: labels %v, want %v", i, got, st.want)
				}
			}
			if status, _ := put(t, f, fl.api, "PROJ-9", `{"update": {"labels": [{"add": "x"}]}}`); status != http.StatusNotFound {
				t.Errorf("PUT of a missing issue: %d, want 404", status)
			}
		})
	}
}
