package workflow

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ParseWorkflow decodes one workflow file, in the format its extension
// names, and checks what can be checked without the rest of the library.
// Errors are a *LoadError whose problems name file.
func ParseWorkflow(file string, data []byte) (*Workflow, error) {
	w, p := parseWorkflow(file, data)
	if p != nil {
		return nil, &LoadError{Problems: []Problem{*p}}
	}
	ps := &problems{}
	w.checkLocal(ps)
	for _, a := range w.Activities {
		a.checkLocal(ps, nil)
	}
	if len(ps.list) > 0 {
		return nil, &LoadError{Problems: ps.list}
	}
	return w, nil
}

// ParseActivity decodes one activity file and checks what can be checked
// without its workflow (references to other activities and skills are
// not). Errors are a *LoadError whose problems name file.
func ParseActivity(file string, data []byte) (*Activity, error) {
	a, p := parseActivity(file, data)
	if p != nil {
		return nil, &LoadError{Problems: []Problem{*p}}
	}
	ps := &problems{}
	a.checkLocal(ps, nil)
	if len(ps.list) > 0 {
		return nil, &LoadError{Problems: ps.list}
	}
	return a, nil
}

func parseWorkflow(file string, data []byte) (*Workflow, *Problem) {
	w := &Workflow{}
	if _, p := decodeFile(file, data, w); p != nil {
		return nil, p
	}
	w.file = file
	for i, a := range w.Activities {
		if a == nil {
			return nil, &Problem{File: file, Field: fmt.Sprintf("activities[%d]", i), Msg: "null is not an activity"}
		}
		a.file, a.field = file, fmt.Sprintf("activities[%d]", i)
	}
	return w, nil
}

func parseActivity(file string, data []byte) (*Activity, *Problem) {
	a := &Activity{}
	if _, p := decodeFile(file, data, a); p != nil {
		return nil, p
	}
	a.file = file
	return a, nil
}

func parseSkill(file string, data []byte) (*Skill, *Problem) {
	s := &Skill{}
	doc, p := decodeFile(file, data, s)
	if p != nil {
		return nil, p
	}
	s.Document, s.file = doc, file
	return s, nil
}

// parseResource reads a Markdown resource (optional front matter with id:
// and version:) or a structured one.
func parseResource(file string, data []byte) (*Resource, *Problem) {
	if len(data) > MaxFileSize {
		return nil, &Problem{File: file, Msg: "file too large"}
	}
	r := &Resource{file: file}
	if !definitionExt(file) {
		body := string(data)
		if rest, ok := strings.CutPrefix(body, "---\n"); ok {
			front, after, found := strings.Cut(rest, "\n---\n")
			if !found {
				return nil, &Problem{File: file, Msg: "front matter opened with --- is never closed"}
			}
			for _, line := range strings.Split(front, "\n") {
				k, v, _ := strings.Cut(line, ":")
				v = strings.Trim(strings.TrimSpace(v), `"'`)
				switch strings.TrimSpace(k) {
				case "id":
					r.ID = v
				case "version":
					r.Version = v
				}
			}
			body = after
		}
		r.Content = body
		return r, nil
	}
	var meta struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	}
	doc, p := decodeFile(file, data, &json.RawMessage{})
	if p != nil {
		return nil, p
	}
	_ = json.Unmarshal(doc, &meta)
	r.ID, r.Version, r.Content = meta.ID, meta.Version, string(data)
	return r, nil
}
