package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MetaWorkflow is the directory of universal skills and resources that
// every workflow falls back to.
const MetaWorkflow = "meta"

// indexedName matches NN-{name}.{ext}.
var indexedName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d{1,9})-(.+)\.([A-Za-z]+)$`) })

// Library is a validated, read-only workflow library. It is safe for
// concurrent use.
type Library struct {
	dir       string
	workflows map[string]*Workflow
	warnings  []Problem
}

// LoadLibrary reads and validates the library in dir (see the package
// documentation for the layout). If any file is unreadable, unparsable or
// invalid it returns a nil Library and a *LoadError listing every problem;
// a valid library may still carry advisory Warnings.
func LoadLibrary(dir string) (*Library, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("workflow: library %s: %w", dir, err)
	}
	l := &Library{dir: dir, workflows: map[string]*Workflow{}}
	ps := &problems{}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case strings.HasPrefix(name, "."):
		case e.IsDir():
			if w := loadWorkflow(path, name, ps); w != nil {
				l.workflows[w.ID] = w
			}
		case definitionExt(name):
			ps.add(path, "", "a root-level workflow file is not read: move it to %s", filepath.Join(dir, strings.TrimSuffix(name, filepath.Ext(name)), "workflow"+filepath.Ext(name)))
		}
	}
	if len(l.workflows) == 0 && len(ps.list) == 0 {
		ps.add(dir, "", "no workflows: want DIR/{workflow}/workflow.toon (or .yaml, .yml, .json)")
	}
	l.validate(ps)
	if len(ps.list) > 0 {
		return nil, &LoadError{Problems: ps.list}
	}
	return l, nil
}

// Dir returns the library directory.
func (l *Library) Dir() string { return l.dir }

// Warnings returns the advisory findings of the load; they do not make the
// library invalid.
func (l *Library) Warnings() []Problem { return slices.Clone(l.warnings) }

// Workflow returns the workflow with the given id.
func (l *Library) Workflow(id string) (*Workflow, bool) {
	w, ok := l.workflows[id]
	return w, ok
}

// Workflows returns every workflow except meta, ordered by id.
func (l *Library) Workflows() []*Workflow {
	var ws []*Workflow
	for id, w := range l.workflows {
		if id != MetaWorkflow {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b *Workflow) int { return strings.Compare(a.ID, b.ID) })
	return ws
}

// Activity returns the workflow's activity with the given id.
func (w *Workflow) Activity(id string) (*Activity, bool) {
	a, ok := w.activities[id]
	return a, ok
}

// Skill returns the skill with the given id for workflow workflowID: its
// own skills/ first, then meta/skills/.
func (l *Library) Skill(workflowID, skillID string) (*Skill, bool) {
	if w, ok := l.workflows[workflowID]; ok {
		if s, ok := w.skills[skillID]; ok {
			return s, true
		}
	}
	if m, ok := l.workflows[MetaWorkflow]; ok {
		s, ok := m.skills[skillID]
		return s, ok
	}
	return nil, false
}

// Resource resolves a resource reference for workflow workflowID: a bare
// index ("5", "05" and "005" are the same) in that workflow, or
// "{workflow}/{index}" in the named one.
func (l *Library) Resource(workflowID, ref string) (*Resource, bool) {
	wf, idx, ok := strings.Cut(ref, "/")
	if !ok {
		wf, idx = workflowID, ref
	}
	n, err := NormalizeIndex(idx)
	if err != nil {
		return nil, false
	}
	w, ok := l.workflows[wf]
	if !ok {
		return nil, false
	}
	r, ok := w.resources[n]
	return r, ok
}

// NormalizeIndex returns the three-digit form of a resource index, so that
// "5", "05" and "005" name the same resource. It accepts 1 to 9 decimal
// digits.
func NormalizeIndex(s string) (string, error) {
	if s == "" || len(s) > 9 || strings.Trim(s, "0123456789") != "" {
		return "", fmt.Errorf("resource index %q: want 1 to 9 decimal digits", s)
	}
	n, _ := strconv.Atoi(s)
	return fmt.Sprintf("%03d", n), nil
}

// loadWorkflow reads one workflow directory; it returns nil if the
// workflow file is missing or unparsable.
func loadWorkflow(dir, name string, ps *problems) *Workflow {
	var file string
	for _, ext := range []string{".toon", ".yaml", ".yml", ".json"} {
		p := filepath.Join(dir, "workflow"+ext)
		if _, err := os.Stat(p); err == nil {
			if file != "" {
				ps.add(p, "", "a second workflow file beside %s: keep one", filepath.Base(file))
				continue
			}
			file = p
		}
	}
	if file == "" {
		ps.add(dir, "", "no workflow file: want workflow.toon, workflow.yaml, workflow.yml or workflow.json")
		return nil
	}
	data, err := readBounded(file)
	if err != nil {
		ps.add(file, "", "%v", err)
		return nil
	}
	w, p := parseWorkflow(file, data)
	if p != nil {
		ps.list = append(ps.list, *p)
		return nil
	}
	if w.ID != name {
		ps.add(file, "id", "%q does not match the directory name %q", w.ID, name)
	}
	adir := filepath.Join(dir, "activities")
	if w.ActivitiesDir != "" {
		rel := filepath.Clean(filepath.FromSlash(w.ActivitiesDir))
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			ps.add(file, "activitiesDir", "%q leaves the workflow directory", w.ActivitiesDir)
			rel = "activities"
		}
		adir = filepath.Join(dir, rel)
	}
	eachIndexed(adir, ps, func(path, index, id string, data []byte) {
		a, p := parseActivity(path, data)
		if p != nil {
			ps.list = append(ps.list, *p)
			return
		}
		if a.ID != id {
			ps.add(path, "id", "%q does not match the file name %q", a.ID, id)
		}
		a.ArtifactPrefix = index
		w.Activities = append(w.Activities, a)
	}, definitionExt)
	w.skills = map[string]*Skill{}
	eachIndexed(filepath.Join(dir, "skills"), ps, func(path, _, id string, data []byte) {
		s, p := parseSkill(path, data)
		if p != nil {
			ps.list = append(ps.list, *p)
			return
		}
		if s.ID != id {
			ps.add(path, "id", "%q does not match the file name %q", s.ID, id)
		}
		if prev, ok := w.skills[s.ID]; ok {
			ps.add(path, "id", "duplicate skill id %q (also in %s)", s.ID, prev.file)
			return
		}
		s.Workflow = w.ID
		w.skills[s.ID] = s
	}, definitionExt)
	w.resources = map[string]*Resource{}
	eachIndexed(filepath.Join(dir, "resources"), ps, func(path, index, name string, data []byte) {
		n, err := NormalizeIndex(index)
		if err != nil {
			ps.add(path, "", "%v", err)
			return
		}
		if prev, ok := w.resources[n]; ok {
			ps.add(path, "", "resource index %s clashes with %s: indices 5, 05 and 005 are the same", n, prev.file)
			return
		}
		r, p := parseResource(path, data)
		if p != nil {
			ps.list = append(ps.list, *p)
			return
		}
		r.Index, r.Name, r.Workflow, r.file = n, name, w.ID, path
		w.resources[n] = r
	}, func(name string) bool { return definitionExt(name) || strings.EqualFold(filepath.Ext(name), ".md") })
	return w
}

// eachIndexed calls fn for every NN-{name}.{ext} file of dir accepted by
// ok, in index order; other files are problems, not silently skipped. A
// missing dir is no files.
func eachIndexed(dir string, ps *problems, fn func(path, index, name string, data []byte), ok func(string) bool) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		ps.add(dir, "", "%v", err)
		return
	}
	type file struct {
		n           int
		index, name string
		path        string
	}
	var files []file
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") {
			continue
		}
		m := indexedName().FindStringSubmatch(name)
		if e.IsDir() || m == nil || !ok(name) {
			ps.add(path, "", "not a definition file: want NN-{id} with a supported extension")
			continue
		}
		n, _ := strconv.Atoi(m[1])
		files = append(files, file{n: n, index: m[1], name: m[2], path: path})
	}
	slices.SortStableFunc(files, func(a, b file) int { return a.n - b.n })
	for _, f := range files {
		data, err := readBounded(f.path)
		if err != nil {
			ps.add(f.path, "", "%v", err)
			continue
		}
		fn(f.path, f.index, f.name, data)
	}
}

// readBounded reads a file of at most MaxFileSize bytes.
func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, more than the %d allowed", fi.Size(), MaxFileSize)
	}
	return os.ReadFile(path)
}
