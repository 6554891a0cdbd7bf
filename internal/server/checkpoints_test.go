package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow/checkpoint"
)

// fakeAnswerer stands in for the orchestrator's checkpoint answers. Like the real one
// it finds a pending checkpoint by identifier (any case) and checkpoint id, refuses an
// option the checkpoint lacks and a second answer, and records the answer.
type fakeAnswerer struct {
	mu      sync.Mutex
	pending []store.CheckpointView
	err     error // returned by every call when set
	calls   []answerCall
}

// answerCall is one AnswerCheckpoint call.
type answerCall struct {
	Identifier, CheckpointID, Option, By, Source string
}

func (f *fakeAnswerer) AnswerCheckpoint(_ context.Context, identifier, checkpointID, option, by, source string) (store.CheckpointView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, answerCall{identifier, checkpointID, option, by, source})
	if f.err != nil {
		return store.CheckpointView{}, f.err
	}
	for i := range f.pending {
		c := &f.pending[i]
		if !strings.EqualFold(c.Identifier, identifier) || c.CheckpointID != checkpointID {
			continue
		}
		if c.Answer != "" {
			return store.CheckpointView{}, fmt.Errorf("%s: checkpoint %s was answered already (%w)", identifier, checkpointID, checkpoint.ErrCheckpointAnswered)
		}
		var valid []string
		for _, o := range c.Options {
			valid = append(valid, o.ID)
		}
		if !slices.Contains(valid, option) {
			return store.CheckpointView{}, &checkpoint.OptionError{Option: option, Checkpoint: checkpointID, Valid: valid}
		}
		c.Answer, c.AnsweredBy, c.AnswerSource, c.AnsweredAt = option, by, source, t0
		return *c, nil
	}
	return store.CheckpointView{}, fmt.Errorf("%s has no pending checkpoint %q: %w", identifier, checkpointID, checkpoint.ErrCheckpointNotFound)
}

func (f *fakeAnswerer) lastCall() (answerCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return answerCall{}, 0
	}
	return f.calls[len(f.calls)-1], len(f.calls)
}

// planCheckpoint is a blocking checkpoint of PROJ-8's plan activity.
func planCheckpoint() store.CheckpointView {
	return store.CheckpointView{
		ID: 7, IssueID: "id-8", Identifier: "PROJ-8", SessionID: "sess-wf-8", Workflow: "work-package", Activity: "plan",
		CheckpointID: "approve-plan", Name: "Approve the plan", Message: "Does the plan in .sortie/plan.md cover the issue?",
		Options: []store.CheckpointOption{
			{ID: "approve", Label: "Approve", Description: "Implement the plan as written"},
			{ID: "revise", Label: "Revise", Description: "Rewrite the plan first"},
		},
		Blocking: true, IssuedAt: t0.Add(-3 * time.Minute),
	}
}

// answerFixture is a server whose answerer holds planCheckpoint.
func answerFixture(t *testing.T, mutate func(*Options)) (*fixture, *fakeAnswerer) {
	t.Helper()
	a := &fakeAnswerer{pending: []store.CheckpointView{planCheckpoint()}}
	f := newFixture(t, func(o *Options) {
		o.Checkpoints = a
		if mutate != nil {
			mutate(o)
		}
	})
	return f, a
}

// post builds a POST with a JSON body.
func post(target, body string, hdr ...string) *http.Request {
	r := request(http.MethodPost, target, hdr...)
	r.Body = stringBody(body)
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

const planURL = "/api/v1/PROJ-8/checkpoints/approve-plan"

func TestAnswer_RecordsTheOptionWhoAnsweredAndHow(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		hdr      []string
		wantBy   string
		wantFrom string
	}{
		{"the dashboard, anonymous", `{"option_id":"approve"}`, []string{ClientHeader, "dashboard"}, "dashboard", store.AnswerDashboard},
		{"the dashboard, named", `{"option_id":"approve","answered_by":"  alice "}`, []string{ClientHeader, "Dashboard"}, "alice", store.AnswerDashboard},
		{"a script, anonymous", `{"option_id":"approve"}`, nil, "api", store.AnswerAPI},
		{"a script, named", `{"option_id":"approve","answered_by":"release-bot"}`, nil, "release-bot", store.AnswerAPI},
		{"a script claiming another client", `{"option_id":"approve"}`, []string{ClientHeader, "curl"}, "api", store.AnswerAPI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a := answerFixture(t, nil)
			w := f.serve(post(planURL, tt.body, tt.hdr...))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200 (%s)", w.Code, w.Body)
			}
			call, n := a.lastCall()
			want := answerCall{"PROJ-8", "approve-plan", "approve", tt.wantBy, tt.wantFrom}
			if n != 1 || call != want {
				t.Fatalf("answerer got %d call(s), last %+v; want one %+v", n, call, want)
			}
			var got checkpointJSON
			decode(t, w, &got)
			if got.CheckpointID != "approve-plan" || got.Answer != "approve" || got.AnsweredBy != tt.wantBy ||
				got.AnswerSource != tt.wantFrom || got.AnsweredAt == nil || !got.AnsweredAt.Equal(t0) {
				t.Errorf("answer = %+v, want approve-plan answered approve by %s via %s at %v", got, tt.wantBy, tt.wantFrom, t0)
			}
			if got.AnswerURL != planURL || got.AutoAdvanceAt != nil || len(got.Options) != 2 {
				t.Errorf("answer_url %q auto_advance_at %v options %d, want %s, null, 2", got.AnswerURL, got.AutoAdvanceAt, len(got.Options), planURL)
			}
		})
	}
}

func TestAnswer_EscapedIdentifier(t *testing.T) {
	f, a := answerFixture(t, nil)
	a.pending[0].Identifier = "acme/api#12"
	w := f.serve(post("/api/v1/acme%2Fapi%2312/checkpoints/approve-plan", `{"option_id":"revise"}`))
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (%s)", w.Code, w.Body)
	}
	var got checkpointJSON
	decode(t, w, &got)
	if call, _ := a.lastCall(); call.Identifier != "acme/api#12" || got.AnswerURL != "/api/v1/acme%2Fapi%2312/checkpoints/approve-plan" {
		t.Errorf("identifier %q answer_url %q, want acme/api#12 and its escaped URL", call.Identifier, got.AnswerURL)
	}
}

func TestAnswer_Errors(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*Options, *fakeAnswerer)
		method   string
		target   string
		body     string
		status   int
		code     string
		wantCall bool // whether the answerer is asked
	}{
		{"unknown checkpoint", nil, "", "/api/v1/PROJ-8/checkpoints/ship-it", `{"option_id":"approve"}`, 404, codeCheckpointNotFound, true},
		{"unknown issue", nil, "", "/api/v1/PROJ-9/checkpoints/approve-plan", `{"option_id":"approve"}`, 404, codeCheckpointNotFound, true},
		{"checkpoint id too long", nil, "", "/api/v1/PROJ-8/checkpoints/" + strings.Repeat("c", maxCheckpointIDLen+1), `{"option_id":"approve"}`, 404, codeCheckpointNotFound, false},
		{"answered already", func(_ *Options, a *fakeAnswerer) { a.pending[0].Answer = "revise" }, "", planURL, `{"option_id":"approve"}`, 409, codeCheckpointAnswered, true},
		{"not an option", nil, "", planURL, `{"option_id":"ship"}`, 422, codeInvalidOption, true},
		{"empty body", nil, "", planURL, ``, 400, codeInvalidBody, false},
		{"not JSON", nil, "", planURL, `option_id=approve`, 400, codeInvalidBody, false},
		{"not an object", nil, "", planURL, `["approve"]`, 400, codeInvalidBody, false},
		{"unknown field", nil, "", planURL, `{"option":"approve"}`, 400, codeInvalidBody, false},
		{"two values", nil, "", planURL, `{"option_id":"approve"}{"option_id":"revise"}`, 400, codeInvalidBody, false},
		{"option_id missing", nil, "", planURL, `{"answered_by":"alice"}`, 400, codeInvalidBody, false},
		{"option_id blank", nil, "", planURL, `{"option_id":"  "}`, 400, codeInvalidBody, false},
		{"option_id too long", nil, "", planURL, `{"option_id":"` + strings.Repeat("o", maxOptionIDLen+1) + `"}`, 400, codeInvalidBody, false},
		{"answered_by too long", nil, "", planURL, `{"option_id":"approve","answered_by":"` + strings.Repeat("é", maxAnsweredByLen+1) + `"}`, 400, codeInvalidBody, false},
		{"answered_by with a newline", nil, "", planURL, `{"option_id":"approve","answered_by":"alice\nSource: tracker"}`, 400, codeInvalidBody, false},
		{"body too large", nil, "", planURL, `{"option_id":"approve","answered_by":"` + strings.Repeat(" ", maxAnswerBody) + `"}`, 400, codeInvalidBody, false},
		{"no answerer", func(o *Options, _ *fakeAnswerer) { o.Checkpoints = nil }, "", planURL, `{"option_id":"approve"}`, 503, codeCheckpointsUnavailable, false},
		{"checkpoints off", func(_ *Options, a *fakeAnswerer) { a.err = checkpoint.ErrCheckpointsOff }, "", planURL, `{"option_id":"approve"}`, 503, codeCheckpointsUnavailable, true},
		{"the store fails", func(_ *Options, a *fakeAnswerer) { a.err = errors.New("recording the answer: disk I/O error") }, "", planURL, `{"option_id":"approve"}`, 500, codeStoreError, true},
		{"GET", nil, http.MethodGet, planURL, ``, 405, codeMethodNotAllowed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &fakeAnswerer{pending: []store.CheckpointView{planCheckpoint()}}
			f := newFixture(t, func(o *Options) {
				o.Checkpoints = a
				if tt.mutate != nil {
					tt.mutate(o, a)
				}
			})
			r := post(tt.target, tt.body)
			if tt.method != "" {
				r.Method = tt.method
			}
			wantError(t, f.serve(r), tt.status, tt.code)
			if _, n := a.lastCall(); (n > 0) != tt.wantCall {
				t.Errorf("answerer called %d time(s), want called: %v", n, tt.wantCall)
			}
			if a.pending[0].Answer != "" && tt.code != codeCheckpointAnswered {
				t.Errorf("the checkpoint was answered %q by a refused request", a.pending[0].Answer)
			}
		})
	}
}

func TestAnswer_InvalidOptionListsTheValidOnes(t *testing.T) {
	f, _ := answerFixture(t, nil)
	w := f.serve(post(planURL, `{"option_id":"ship"}`))
	e := wantError(t, w, http.StatusUnprocessableEntity, codeInvalidOption)
	var body invalidOptionBody
	decode(t, w, &body)
	if !slices.Equal(body.ValidOptions, []string{"approve", "revise"}) || !strings.Contains(e.Message, "approve, revise") {
		t.Errorf("valid_options %q message %q, want [approve revise] in both", body.ValidOptions, e.Message)
	}
}

func TestAnswer_NeedsTheTokenAndTheSameOrigin(t *testing.T) {
	tests := []struct {
		name   string
		hdr    []string
		status int
		code   string
	}{
		{"no token", nil, 401, codeUnauthorized},
		{"wrong token", []string{"Authorization", "Bearer nope"}, 401, codeUnauthorized},
		{"bearer token", []string{"Authorization", "Bearer " + testToken}, 200, ""},
		{"the dashboard's cookie", []string{"Cookie", cookieName + "=" + newAuthenticator(testToken).cookie, ClientHeader, "dashboard", "Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:7678"}, 200, ""},
		{"another site's page", []string{"Cookie", cookieName + "=" + newAuthenticator(testToken).cookie, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 403, codeCrossOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a := answerFixture(t, func(o *Options) { o.AuthToken = testToken })
			w := f.serve(post(planURL, `{"option_id":"approve"}`, tt.hdr...))
			_, n := a.lastCall()
			if tt.status == 200 {
				if w.Code != 200 || n != 1 {
					t.Fatalf("status %d with %d answer(s), want 200 and one answer (%s)", w.Code, n, w.Body)
				}
				return
			}
			wantError(t, w, tt.status, tt.code)
			if n != 0 {
				t.Errorf("the answerer was called %d time(s) for a refused request", n)
			}
		})
	}
}
