// Package migration reads the numbered schema migrations a SQL store embeds
// (migrations/NNN_name.sql). Applying them is each store's business: the SQL and the
// locking differ between SQLite and PostgreSQL, the numbering rules do not.
package migration

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"sync"
)

// Migration is one schema change: the file migrations/NNN_name.sql.
type Migration struct {
	Version int    // NNN: 1, 2, …
	Name    string // e.g. "initial"
	SQL     string // the file's statements
}

var fileName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{3})_([a-z0-9_]+)\.sql$`) })

// Load parses the migrations in fsys's directory migrations, which must be named
// NNN_name.sql and numbered 001, 002, … without gaps. It returns them in order.
func Load(fsys fs.FS) ([]Migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, f := range files { // Glob returns names sorted
		base := path.Base(f)
		m := fileName().FindStringSubmatch(base)
		if m == nil {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.sql", base)
		}
		v, _ := strconv.Atoi(m[1])
		if v != len(ms)+1 {
			return nil, fmt.Errorf("migration %s: want version %03d next (versions start at 001 and have no gaps)", base, len(ms)+1)
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: string(b)})
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations")
	}
	return ms, nil
}
