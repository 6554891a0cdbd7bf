package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"sortie/internal/store"
	"sortie/internal/workflow/checkpoint"
)

// Structured-workflow checkpoints (docs/workflows.md, "Checkpoints and humans"): the
// state lists the pending ones, and POST /api/v1/{identifier}/checkpoints/{id} records
// a human's answer.

// CheckpointAnswerer records a human's answer to a pending workflow checkpoint: the
// part of the checkpoint component POST /api/v1/{identifier}/checkpoints/{checkpoint_id}
// needs (*checkpoint.Desk satisfies it).
type CheckpointAnswerer interface {
	// AnswerCheckpoint answers checkpoint checkpointID of the issue identifier with
	// option; by names who answered, source is store.AnswerDashboard or
	// store.AnswerAPI. It fails with checkpoint.ErrCheckpointNotFound,
	// ErrCheckpointAnswered, ErrCheckpointsOff or an *checkpoint.OptionError.
	AnswerCheckpoint(ctx context.Context, identifier, checkpointID, option, by, source string) (store.CheckpointView, error)
}

var _ CheckpointAnswerer = (*checkpoint.Desk)(nil)

// Bounds of an answer.
const (
	maxAnswerBody      = 4 << 10 // bytes of the JSON body
	maxOptionIDLen     = 128     // bytes of option_id
	maxAnsweredByLen   = 100     // characters of answered_by
	maxCheckpointIDLen = 256     // bytes of the path's checkpoint id
	// answerTimeout bounds recording an answer (a database write).
	answerTimeout = 5 * time.Second
)

// ClientHeader is the request header the dashboard sets on its answers
// (ClientHeader: dashboard), so they are recorded with source "dashboard"; every other
// answer is recorded as "api".
const ClientHeader = "X-Sortie-Client"

// checkpointJSON is a pending checkpoint in the state, in awaiting_input entries and
// in the answer of a POST.
type checkpointJSON struct {
	IssueID       string                   `json:"issue_id"`
	Identifier    string                   `json:"issue_identifier"`
	SessionID     string                   `json:"session_id"`
	Workflow      string                   `json:"workflow"`
	Activity      string                   `json:"activity"`
	CheckpointID  string                   `json:"checkpoint_id"`
	Name          string                   `json:"name"`
	Message       string                   `json:"message"`
	Options       []store.CheckpointOption `json:"options"`
	Blocking      bool                     `json:"blocking"`
	DefaultOption string                   `json:"default_option"`
	// AutoAdvanceAt is when the daemon answers with DefaultOption; null for a
	// blocking checkpoint.
	AutoAdvanceAt *time.Time `json:"auto_advance_at"`
	IssuedAt      time.Time  `json:"issued_at"`
	// The answer, once given; "" and null before.
	Answer       string     `json:"answer"`
	AnsweredBy   string     `json:"answered_by"`
	AnswerSource string     `json:"answer_source"`
	AnsweredAt   *time.Time `json:"answered_at"`
	// AnswerURL is where to POST the answer.
	AnswerURL string `json:"answer_url"`
}

func checkpointOf(v store.CheckpointView) checkpointJSON {
	opts := v.Options
	if opts == nil {
		opts = []store.CheckpointOption{}
	}
	return checkpointJSON{
		IssueID: v.IssueID, Identifier: v.Identifier, SessionID: v.SessionID, Workflow: v.Workflow,
		Activity: v.Activity, CheckpointID: v.CheckpointID, Name: v.Name, Message: v.Message, Options: opts,
		Blocking: v.Blocking, DefaultOption: v.DefaultOption, AutoAdvanceAt: optTime(v.AutoAdvanceAt),
		IssuedAt: v.IssuedAt, Answer: v.Answer, AnsweredBy: v.AnsweredBy, AnswerSource: v.AnswerSource,
		AnsweredAt: optTime(v.AnsweredAt), AnswerURL: answerURL(v.Identifier, v.CheckpointID),
	}
}

// answerURL is the path that answers a checkpoint.
func answerURL(identifier, checkpointID string) string {
	return "/api/v1/" + url.PathEscape(identifier) + "/checkpoints/" + url.PathEscape(checkpointID)
}

func checkpointsOf(views []store.CheckpointView) []checkpointJSON {
	out := make([]checkpointJSON, len(views))
	for i, v := range views {
		out[i] = checkpointOf(v)
	}
	return out
}

// answerRequest is the body of POST /api/v1/{identifier}/checkpoints/{checkpoint_id}.
type answerRequest struct {
	OptionID   string `json:"option_id"`
	AnsweredBy string `json:"answered_by"`
}

// invalidOptionBody is the 422 answer: the error envelope and the options to choose from.
type invalidOptionBody struct {
	Error        errorDetail `json:"error"`
	ValidOptions []string    `json:"valid_options"`
}

// handleAnswer is POST /api/v1/{identifier}/checkpoints/{checkpoint_id}: a human's
// answer to a pending checkpoint. 200 with the answered checkpoint; 400 for a bad
// body, 404 when the issue has no such pending checkpoint, 409 when it was answered
// already, 422 for an option the checkpoint does not have, 503 when checkpoints are
// off.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	if s.opts.Checkpoints == nil {
		writeError(w, http.StatusServiceUnavailable, codeCheckpointsUnavailable,
			"this daemon answers no workflow checkpoints: structured workflows are not configured (workflows.dir in WORKFLOW.md)")
		return
	}
	id, cpID := r.PathValue("identifier"), r.PathValue("checkpoint_id")
	if id == "" || len(id) > maxIdentifierLen || cpID == "" || len(cpID) > maxCheckpointIDLen {
		writeError(w, http.StatusNotFound, codeCheckpointNotFound,
			"no pending checkpoint "+clip(cpID)+" of issue "+clip(id))
		return
	}
	req, msg := readAnswer(w, r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidBody, msg+`; send {"option_id": "<an option's id>", "answered_by": "<your name, optional>"}`)
		return
	}
	source := store.AnswerAPI
	if strings.EqualFold(strings.TrimSpace(r.Header.Get(ClientHeader)), "dashboard") {
		source = store.AnswerDashboard
	}
	by := req.AnsweredBy
	if by == "" {
		by = source
	}

	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	defer cancel()
	v, err := s.opts.Checkpoints.AnswerCheckpoint(ctx, id, cpID, req.OptionID, by, source)
	var optErr *checkpoint.OptionError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, checkpointOf(v))
	case errors.As(err, &optErr):
		valid := optErr.Valid
		if valid == nil {
			valid = []string{}
		}
		writeJSON(w, http.StatusUnprocessableEntity, invalidOptionBody{
			Error:        errorDetail{codeInvalidOption, fmt.Sprintf("%q is not an option of checkpoint %s; choose one of: %s", clip(req.OptionID), clip(cpID), strings.Join(valid, ", "))},
			ValidOptions: valid,
		})
	case errors.Is(err, checkpoint.ErrCheckpointAnswered):
		writeError(w, http.StatusConflict, codeCheckpointAnswered, err.Error())
	case errors.Is(err, checkpoint.ErrCheckpointNotFound):
		writeError(w, http.StatusNotFound, codeCheckpointNotFound,
			err.Error()+"; GET /api/v1/state lists the pending checkpoints under checkpoints")
	case errors.Is(err, checkpoint.ErrCheckpointsOff):
		writeError(w, http.StatusServiceUnavailable, codeCheckpointsUnavailable,
			"this daemon answers no workflow checkpoints: "+err.Error())
	default:
		s.log.Warn("http: recording a checkpoint answer failed", "issue_identifier", id, "checkpoint", cpID, "error", err)
		writeError(w, http.StatusInternalServerError, codeStoreError, "recording the answer failed: "+err.Error())
	}
}

// readAnswer parses and bounds the body of an answer. It returns what is wrong with
// it, or "".
func readAnswer(w http.ResponseWriter, r *http.Request) (answerRequest, string) {
	var req answerRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAnswerBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return req, fmt.Sprintf("the body is larger than %d bytes", maxAnswerBody)
		case errors.Is(err, io.EOF):
			return req, "the body is empty"
		default:
			return req, "the body is not the expected JSON object: " + err.Error()
		}
	}
	if dec.More() {
		return req, "the body holds more than one JSON value"
	}
	req.OptionID = strings.TrimSpace(req.OptionID)
	req.AnsweredBy = strings.TrimSpace(req.AnsweredBy)
	switch {
	case req.OptionID == "":
		return req, "option_id: missing"
	case len(req.OptionID) > maxOptionIDLen:
		return req, fmt.Sprintf("option_id: longer than %d bytes", maxOptionIDLen)
	case !printable(req.OptionID):
		return req, "option_id: must be printable UTF-8 text"
	case utf8.RuneCountInString(req.AnsweredBy) > maxAnsweredByLen:
		return req, fmt.Sprintf("answered_by: longer than %d characters", maxAnsweredByLen)
	case !printable(req.AnsweredBy):
		return req, "answered_by: must be printable UTF-8 text on one line"
	}
	return req, ""
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
