package toon

import (
	"fmt"
	"strings"
)

// insert stores a decoded field in obj, applying path expansion (§13.4)
// when enabled. dup says the same literal key appeared before in this
// object; in lenient mode it is replaced (last write wins, §14.4).
func (p *parser) insert(obj *Object, key string, quoted, dup bool, v any, ln *line, base int) error {
	if p.opts.ExpandPaths == ExpandSafe && !quoted && strings.Contains(key, ".") {
		segs := strings.Split(key, ".")
		if len(segs) <= MaxDepth && allIdentifiers(segs) {
			cur := obj
			for i, s := range segs[:len(segs)-1] {
				ex, ok := cur.Get(s)
				next, isObj := ex.(*Object)
				if ok && !isObj {
					if p.opts.Strict {
						return p.errAt(ln, base, fmt.Sprintf("path expansion conflict at %q: %s already holds a %s, not an object", strings.Join(segs[:i+1], "."), s, kind(ex)))
					}
					ok = false
				}
				if !ok {
					next = newObject()
					cur.set(s, next)
				}
				cur = next
			}
			return p.merge(cur, segs[len(segs)-1], v, key, ln, base)
		}
	}
	if dup || p.opts.ExpandPaths != ExpandSafe {
		obj.set(key, v)
		return nil
	}
	return p.merge(obj, key, v, key, ln, base)
}

// merge sets obj[key] = v, deep-merging two objects; any other overlap is
// a conflict: an error in strict mode, last write wins otherwise.
func (p *parser) merge(obj *Object, key string, v any, path string, ln *line, base int) error {
	ex, ok := obj.Get(key)
	if !ok {
		obj.set(key, v)
		return nil
	}
	exObj, exIsObj := ex.(*Object)
	vObj, vIsObj := v.(*Object)
	if exIsObj && vIsObj {
		for _, k := range vObj.keys {
			if err := p.merge(exObj, k, vObj.vals[k], path+"."+k, ln, base); err != nil {
				return err
			}
		}
		return nil
	}
	if p.opts.Strict {
		return p.errAt(ln, base, fmt.Sprintf("path expansion conflict at %q: %s vs %s", path, kind(ex), kind(v)))
	}
	obj.set(key, v)
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case *Object:
		return "object"
	case []any:
		return "array"
	default:
		return "primitive"
	}
}

// allIdentifiers reports whether every segment is an IdentifierSegment
// (§1.9): ^[A-Za-z_][A-Za-z0-9_]*$.
func allIdentifiers(segs []string) bool {
	for _, s := range segs {
		if s == "" || isDigit(s[0]) {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c != '_' && !isDigit(c) && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
				return false
			}
		}
	}
	return true
}
