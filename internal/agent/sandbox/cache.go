package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sortie/internal/ttlmap"
)

// expansionTTL is how long RestrictThread reuses what a root expanded to. Every start
// of a busy daemon confines with the same forty-odd roots (the system, the PATH, the
// CLI's installation), each resolved through its symbolic links: hundreds of stat
// calls per start that find the same answer. A cached answer can only be stale the
// safe way: rules are made by opening the cached paths without following any link
// (see openGrant), so a path that became a link is refused and everything is
// expanded afresh; a root created or retargeted meanwhile is granted from the first
// start after the entry expires.
const expansionTTL = 5 * time.Second

// maxCachedRoots bounds the cache: a daemon's per-run roots (workspaces, temporary
// directories) are all different, so without a bound they would pile up until they
// expire.
const maxCachedRoots = 1024

// expansionCache remembers, for a little while, how roots and hidden paths resolve
// and expand. The zero value is not usable; see newExpansionCache.
type expansionCache struct {
	now    func() time.Time
	hidden *ttlmap.Map[string, []string] // resolved hidden (or private) paths, by the paths joined
	roots  *ttlmap.Map[rootKey, []grant]
	dirs   *ttlmap.Map[string, string] // the parents of roots, resolved
}

type rootKey struct{ root, exclusions string }

func newExpansionCache(now func() time.Time, ttl time.Duration) *expansionCache {
	return &expansionCache{
		now:    now,
		hidden: ttlmap.New[string, []string](ttl, maxCachedRoots),
		roots:  ttlmap.New[rootKey, []grant](ttl, maxCachedRoots),
		dirs:   ttlmap.New[string, string](ttl, maxCachedRoots),
	}
}

// expansions is RestrictThread's cache.
var expansions = newExpansionCache(time.Now, expansionTTL)

// expandPolicy is expand(p), each root's grants from the cache when fresh.
func (c *expansionCache) expandPolicy(p Policy) (write, read []grant, err error) {
	ex := c.exclusions(p)
	if write, err = c.expand(p.Write, ex.forWrite()); err != nil {
		return nil, nil, err
	}
	if read, err = c.expand(p.Read, ex); err != nil {
		return nil, nil, err
	}
	return write, read, nil
}

// exclusions is resolveExclusions(p), from the cache when fresh.
func (c *expansionCache) exclusions(p Policy) exclusions {
	hidden, hk := c.resolveHidden(p.Hide)
	private, pk := c.resolveHidden(p.Private)
	// Read roots' keys and write roots' keys never meet: the write roots' expansion
	// ignores the private paths.
	return exclusions{hidden: hidden, private: private, key: "r\x00" + hk + "\x00\x00" + pk, hiddenKey: "w\x00" + hk}
}

// resolveHidden is resolveAllHidden(hide), from the cache when fresh.
func (c *expansionCache) resolveHidden(hide []string) (resolved []string, key string) {
	key = strings.Join(hide, "\x00")
	now := c.now()
	if r, ok := c.hidden.Get(key, now); ok {
		return r, key
	}
	resolved = resolveAllHidden(hide)
	c.hidden.Put(key, resolved, now)
	return resolved, key
}

// expand is expandResolved(roots, ex), each root's grants from the cache when fresh;
// ex comes from c.exclusions, whose key names it.
func (c *expansionCache) expand(roots []string, ex exclusions) ([]grant, error) {
	var out []grant
	seen := make(map[string]bool, len(roots))
	now := c.now()
	for _, root := range roots {
		if seen[root] {
			continue
		}
		seen[root] = true
		k := rootKey{root, ex.key}
		if g, ok := c.roots.Get(k, now); ok {
			out = append(out, g...)
			continue
		}
		var g []grant
		if r, err := c.resolve(root, now); err == nil { // a missing root grants nothing
			if g, err = expandOne(r, ex.of(r)); err != nil {
				return nil, err
			}
		}
		c.roots.Put(k, g, now)
		out = append(out, g...)
	}
	return out, nil
}

// resolve is resolve(path) with path's directory resolved from the cache when fresh, so
// that a root seen for the first time costs one lstat rather than one per element of
// its path: the roots of one run (its workspace, its temporary directory, its CLI's
// state) are new every time, but their directories are the same for every run. A
// cached directory is as stale as a cached root may be (see expansionTTL): if it has
// become a link meanwhile, the rules' paths are refused and everything is expanded
// afresh.
func (c *expansionCache) resolve(path string, now time.Time) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, name := filepath.Dir(abs), filepath.Base(abs)
	if dir == abs {
		return abs, nil // the file system's root
	}
	resolved, ok := c.dirs.Get(dir, now)
	if !ok {
		if resolved, err = filepath.EvalSymlinks(dir); err != nil {
			return "", err
		}
		c.dirs.Put(dir, resolved, now)
	}
	r := filepath.Join(resolved, name)
	fi, err := os.Lstat(r)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return filepath.EvalSymlinks(r)
	}
	return r, nil
}

// forget empties the cache, so that the next expansion resolves everything afresh.
func (c *expansionCache) forget() {
	c.roots.Clear()
	c.hidden.Clear()
	c.dirs.Clear()
}

// prune drops the grants another grant already covers, so that the ruleset has one
// rule where the policy names a directory and things beneath it (/usr and /usr/bin,
// a PATH entry and its prefix, a path granted for reading beneath one granted for
// writing). Rules only add access, and Landlock checks a path against the rules of
// every directory above it, so the rules that remain allow exactly what all of them
// did. Paths are resolved, so "beneath" is the real hierarchy.
func prune(write, read []grant) ([]grant, []grant) {
	// A policy whose hidden paths sit in a big directory expands into hundreds of
	// grants, once per agent start: each grant looks up its ancestors (a few) in a
	// set rather than comparing itself with every other grant.
	writeDirs, readDirs := dirSet(write), dirSet(read)
	seen := make(map[grant]bool, len(write)+len(read)) // of two identical grants, the first stays
	var w, r []grant
	for _, g := range write {
		if !seen[g] && !beneathDir(g.path, writeDirs) {
			seen[g] = true
			w = append(w, g)
		}
	}
	for _, g := range read {
		if !seen[g] && !beneathDir(g.path, writeDirs) && !beneathDir(g.path, readDirs) {
			seen[g] = true
			r = append(r, g)
		}
	}
	return w, r
}

// dirSet is the set of the paths of gs's directory grants.
func dirSet(gs []grant) map[string]bool {
	dirs := make(map[string]bool, len(gs))
	for _, g := range gs {
		if g.dir {
			dirs[g.path] = true
		}
	}
	return dirs
}

// beneathDir reports whether a directory of dirs is a proper ancestor of path (a
// resolved, absolute path).
func beneathDir(path string, dirs map[string]bool) bool {
	if path != "/" && dirs["/"] {
		return true
	}
	for k := len(path) - 1; k > 0; k-- {
		if path[k] == '/' && dirs[path[:k]] {
			return true
		}
	}
	return false
}
