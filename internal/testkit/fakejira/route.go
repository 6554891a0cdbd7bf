package fakejira

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The routes served, under /rest/api/3 (Cloud) or /rest/api/2 (Data Center):
//
//	GET  /search/jql                 Cloud: JQL search paged by nextPageToken
//	GET  /search                     Data Center: JQL search paged by startAt
//	POST /issue/bulkfetch            Cloud: issues by id or key, at most 100
//	GET  /myself                     the token's account
//	GET  /issue/{ref}                one issue
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
