package fakejira

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The routes served, under /rest/api/3 (Cloud) or /rest/api/2 (Data Center):
//
//	GET  /search/jql                 Cloud: JQL search paged by nextPageToken
//	GET  /search                     Data Center: JQL search paged by startAt
//	POST /issue/bulkfetch            Cloud: issues by id or key, at most 100
//	GET  /myself                     the token's account
//	GET  /issue/{ref}                one issue
//	PUT  /issue/{ref}                edits it: labels only, by update (add, remove, set)
//	                                 or fields (204)
//	GET  /issue/{ref}/transitions    the transitions it offers
//	POST /issue/{ref}/transitions    moves it by one of them (204)
//	GET  /issue/{ref}/comment        its comments, by startAt, at most 2 a page
//	POST /issue/{ref}/comment        adds a comment by the token's account (201)

// route answers an authorised request; the lock is held.
func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte) {
	api := "/rest/api/2"
	if s.cloud {
		api = "/rest/api/3"
	}
	path, ok := strings.CutPrefix(r.URL.Path, api)
	if !ok {
		WriteError(w, http.StatusNotFound, "no such API")
		return
	}
	switch {
	case s.cloud && path == "/search/jql" && r.Method == http.MethodGet:
		s.searchCloud(w, r)
	case !s.cloud && path == "/search" && r.Method == http.MethodGet:
		s.searchDC(w, r)
	case s.cloud && path == "/issue/bulkfetch" && r.Method == http.MethodPost:
		var req struct {
			IssueIdsOrKeys []string `json:"issueIdsOrKeys"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.IssueIdsOrKeys) > 100 {
			WriteError(w, http.StatusBadRequest, "bad bulkfetch")
			return
		}
		out := []map[string]any{}
		for _, is := range s.issues {
			if slices.Contains(req.IssueIdsOrKeys, is["id"].(string)) || slices.Contains(req.IssueIdsOrKeys, is["key"].(string)) {
				out = append(out, is)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"issues": out, "issueErrors": []any{}})
	case path == "/myself" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.bot())
	case strings.HasPrefix(path, "/issue/"):
		s.issue(w, r, strings.Split(strings.TrimPrefix(path, "/issue/"), "/"), body)
	default:
		WriteError(w, http.StatusNotFound, "no route "+path)
	}
}

// bot is the account the token belongs to, as GET /myself and comment authors show it:
// Cloud names it by accountId, Data Center by key and name.
func (s *Server) bot() map[string]any {
	if s.cloud {
		return map[string]any{"accountId": "5b10ac8d82e05b22cc7d4ef5", "accountType": "atlassian",
			"displayName": "Sortie Bot", "emailAddress": "sortie@example.com"}
	}
	return map[string]any{"key": "JIRAUSER10100", "name": "sortie", "displayName": "Sortie Bot",
		"emailAddress": "sortie@example.com"}
}

func (s *Server) issue(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	is := s.find(parts[0])
	if is == nil {
		WriteError(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
		return
	}
	id := is["id"].(string)
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, is)
	case len(parts) == 1 && r.Method == http.MethodPut:
		s.edit(w, is, body)
	case len(parts) == 2 && parts[1] == "transitions" && r.Method == http.MethodGet:
		ts := s.transitions[id]
		if ts == nil {
			ts = []map[string]any{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"transitions": ts})
	case len(parts) == 2 && parts[1] == "transitions" && r.Method == http.MethodPost:
		var req struct {
			Transition struct {
				ID string `json:"id"`
			} `json:"transition"`
		}
		_ = json.Unmarshal(body, &req)
		for _, tr := range s.transitions[id] {
			if tr["id"] == req.Transition.ID {
				to, _ := tr["to"].(map[string]any)
				fields(is)["status"] = map[string]any{"name": to["name"]}
				s.touch(is)
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		WriteError(w, http.StatusBadRequest, "Transition id '"+req.Transition.ID+"' is not valid for this issue.")
	case len(parts) == 2 && parts[1] == "comment" && r.Method == http.MethodGet:
		all := s.comments[id]
		start, _ := strconv.Atoi(r.URL.Query().Get("startAt"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("maxResults"))
		limit = min(limit, 2) // a small server cap, so paging is exercised
		end := min(start+limit, len(all))
		page := []map[string]any{}
		if start < len(all) {
			page = all[start:end]
		}
		writeJSON(w, http.StatusOK, map[string]any{"startAt": start, "maxResults": limit, "total": len(all), "comments": page})
	case len(parts) == 2 && parts[1] == "comment" && r.Method == http.MethodPost:
		var req struct {
			Body json.RawMessage `json:"body"`
		}
		if json.Unmarshal(body, &req) != nil {
			WriteError(w, http.StatusBadRequest, "bad comment")
			return
		}
		// Cloud v3 accepts only ADF bodies, v2 only strings.
		if s.cloud != strings.HasPrefix(strings.TrimSpace(string(req.Body)), "{") {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]string{"comment": "Comment body is not valid"}})
			return
		}
		c := s.addComment(is, s.bot(), req.Body)
		s.touch(is)
		writeJSON(w, http.StatusCreated, c)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, nil)
	}
}

func (s *Server) searchCloud(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := s.match(q.Get("jql"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit, _ := strconv.Atoi(q.Get("maxResults"))
	limit = min(limit, s.maxPage)
	start := 0
	if tok := q.Get("nextPageToken"); tok != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(tok, "tok-"))
	}
	start = min(max(start, 0), len(all))
	end := min(start+limit, len(all))
	resp := map[string]any{"issues": all[start:end], "isLast": end >= len(all)}
	if end < len(all) {
		resp["nextPageToken"] = "tok-" + strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) searchDC(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := s.match(q.Get("jql"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	start, _ := strconv.Atoi(q.Get("startAt"))
	limit, _ := strconv.Atoi(q.Get("maxResults"))
	limit = min(limit, s.maxPage)
	start = min(max(start, 0), len(all))
	end := min(start+limit, len(all))
	writeJSON(w, http.StatusOK, map[string]any{"startAt": start, "maxResults": limit, "total": len(all), "issues": all[start:end]})
}

// edit answers PUT /issue/{ref} as Jira does for the labels field, the only one the
// fake edits: {"update": {"labels": [{"add": l}, {"remove": l}, {"set": [...]}]}} or
// {"fields": {"labels": [...]}}. A label with whitespace, an empty one or one over 255
// characters is refused (400, errors.labels) and nothing changes; any other field is
// refused as not on the edit screen. Labels compare exactly (Jira's are
// case-sensitive); adding one the issue has changes nothing, not even the updated time.
func (s *Server) edit(w http.ResponseWriter, is map[string]any, body []byte) {
	var req struct {
		Update map[string][]map[string]json.RawMessage `json:"update"`
		Fields map[string]json.RawMessage              `json:"fields"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		WriteError(w, http.StatusBadRequest, "Unexpected character in the request body")
		return
	}
	fieldError := func(msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{}, "errors": map[string]string{"labels": msg}})
	}
	for name := range req.Update {
		if name != "labels" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{}, "errors": map[string]string{
				name: "Field '" + name + "' cannot be set. It is not on the appropriate screen, or unknown."}})
			return
		}
	}
	for name := range req.Fields {
		if name != "labels" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{}, "errors": map[string]string{
				name: "Field '" + name + "' cannot be set. It is not on the appropriate screen, or unknown."}})
			return
		}
	}
	labels := labelsOf(is)
	valid := func(l string) bool {
		switch {
		case l == "":
			fieldError("The label must not be empty.")
		case strings.ContainsFunc(l, unicode.IsSpace):
			fieldError("The label '" + l + "' contains spaces which is invalid.")
		case utf8.RuneCountInString(l) > 255:
			fieldError("The entered text is too long. It exceeds the allowed limit of 255 characters.")
		default:
			return true
		}
		return false
	}
	next := slices.Clone(labels)
	if raw, ok := req.Fields["labels"]; ok {
		var set []string
		if json.Unmarshal(raw, &set) != nil {
			fieldError("data was not an array")
			return
		}
		for _, l := range set {
			if !valid(l) {
				return
			}
		}
		next = set
	}
	for _, op := range req.Update["labels"] {
		for verb, raw := range op {
			switch verb {
			case "add", "remove":
				var l string
				if json.Unmarshal(raw, &l) != nil {
					fieldError("Operation value must be a string")
					return
				}
				if verb == "remove" {
					next = slices.DeleteFunc(next, func(x string) bool { return x == l })
					continue
				}
				if !valid(l) {
					return
				}
				if !slices.Contains(next, l) {
					next = append(next, l)
				}
			case "set":
				var set []string
				if json.Unmarshal(raw, &set) != nil {
					fieldError("Operation value must be an array of strings")
					return
				}
				for _, l := range set {
					if !valid(l) {
						return
					}
				}
				next = set
			default:
				fieldError("Field does not support update '" + verb + "'")
				return
			}
		}
	}
	if !slices.Equal(next, labels) {
		out := make([]any, len(next))
		for i, l := range next {
			out[i] = l
		}
		fields(is)["labels"] = out
		s.touch(is)
	}
	w.WriteHeader(http.StatusNoContent)
}

// labelsOf returns an issue's labels.
func labelsOf(is map[string]any) []string {
	raw, _ := fields(is)["labels"].([]any)
	out := make([]string, 0, len(raw))
	for _, l := range raw {
		if s, ok := l.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
