package fakejira

import (
	"fmt"
	"slices"
	"strings"
)

// match evaluates the JQL shapes the adapter sends: project = "P" (by key prefix),
// status IN (...) (case-insensitively and trimmed, as Jira compares status names), key IN (...)
// and id IN (...), joined by AND. Anything else, a query_filter clause or ORDER BY,
// is ignored; results come in the order the issues were added.
func (s *Server) match(jql string) ([]map[string]any, error) {
	toks, err := LexJQL(jql)
	if err != nil {
		return nil, err
	}
	var project string
	var states, keys, ids []string
	for i := 0; i < len(toks); i++ {
		switch {
		case toks[i].is("project") && i+2 < len(toks):
			project = toks[i+2].Text
		case toks[i].is("status") || toks[i].is("key") || toks[i].is("id"):
			field := strings.ToLower(toks[i].Text)
			j := i + 3 // field IN (
			for ; j < len(toks) && toks[j].Text != ")"; j++ {
				if toks[j].Text == "," {
					continue
				}
				switch field {
				case "status":
					states = append(states, toks[j].Text)
				case "key":
					keys = append(keys, toks[j].Text)
				case "id":
					ids = append(ids, toks[j].Text)
				}
			}
			i = j
		case toks[i].is("order"):
			i = len(toks)
		}
	}
	out := []map[string]any{}
	for _, is := range s.issues {
		key := is["key"].(string)
		st := strings.TrimSpace(status(is))
		switch {
		case project != "" && !strings.HasPrefix(key, project+"-"),
			states != nil && !slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(strings.TrimSpace(s), st) }),
			keys != nil && !slices.Contains(keys, key),
			ids != nil && !slices.Contains(ids, is["id"].(string)):
			continue
		}
		out = append(out, is)
	}
	return out, nil
}

// JQLToken is one lexical token of JQL: a quoted string (Text unescaped, Quoted set),
// a word or number, or one of ( ) , =.
type JQLToken struct {
	Text   string
	Quoted bool
}

// is reports whether t is the bare word w, case-insensitively.
func (t JQLToken) is(w string) bool { return !t.Quoted && strings.EqualFold(t.Text, w) }

// LexJQL splits JQL as Jira's parser does for the subset Sortie sends: double- and
// single-quoted strings with backslash escapes, punctuation, and bare words. An
// unterminated string is an error.
func LexJQL(s string) ([]JQLToken, error) {
	var toks []JQLToken
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n':
		case r == '(' || r == ')' || r == ',' || r == '=':
			toks = append(toks, JQLToken{Text: string(r)})
		case r == '"' || r == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(rs) && rs[j] != r; j++ {
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
				}
				b.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			toks = append(toks, JQLToken{Text: b.String(), Quoted: true})
			i = j
		default:
			j := i
			for j < len(rs) && !strings.ContainsRune(" \t\n(),=\"'", rs[j]) {
				j++
			}
			toks = append(toks, JQLToken{Text: string(rs[i:j])})
			i = j - 1
		}
	}
	return toks, nil
}
