package prompt

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	liquidfilters "github.com/osteele/liquid/filters"
	"github.com/osteele/liquid/parser"
	liquidrender "github.com/osteele/liquid/render"
	liquidtags "github.com/osteele/liquid/tags"
	"github.com/osteele/liquid/values"
)

// liquidTemplate is a prompt in Liquid, Symphony's dialect, rendered by
// github.com/osteele/liquid. That engine's own strict mode is not used: it treats a
// variable that holds nil (an issue without a priority, `attempt` on a first run) as
// undefined and does not look at tags at all. Strictness is Sortie's instead: names are
// checked against the data's shape when the template is parsed (liquidcheck.go), and an
// object rendered from the data fails on a key it does not have (liquidObject).
type liquidTemplate struct {
	root liquidrender.Node
}

// liquidConfig is the engine's configuration: the standard tags and filters. It is
// only read after it is built, so templates share it and render concurrently.
var liquidConfig = sync.OnceValue(func() liquidrender.Config {
	cfg := liquidrender.NewConfig()
	liquidfilters.AddStandardFilters(&cfg)
	liquidtags.AddStandardTags(cfg)
	return cfg
})

// parseLiquid parses src, whose first line is line firstLine of the workflow file name.
func parseLiquid(name, src string, firstLine int) (_ *liquidTemplate, err error) {
	defer func() {
		// The engine panics on some malformed input (an integer literal that overflows,
		// for one) instead of returning an error.
		if r := recover(); r != nil {
			err = &TemplateError{Kind: ErrParse, Name: name, Err: fmt.Errorf("invalid Liquid template: %v", r)}
		}
	}()
	cfg := liquidConfig()
	loc := parser.SourceLoc{Pathname: name, LineNo: firstLine}
	root, perr := cfg.Compile(src, loc)
	if perr != nil {
		return nil, liquidError(ErrParse, name, perr)
	}
	ast, perr := cfg.Parse(src, loc)
	if perr != nil {
		return nil, liquidError(ErrParse, name, perr)
	}
	if err := checkLiquid(name, ast); err != nil {
		return nil, err
	}
	return &liquidTemplate{root: root}, nil
}

// render writes the template rendered against data (templateData's map) to w.
func (t *liquidTemplate) render(name string, w io.Writer, data map[string]any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// The engine panics when the writer fails at its final flush (the size
			// limit) and on errors it does not classify.
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			err = &TemplateError{Kind: ErrRender, Name: name, Err: liquidCause(e)}
		}
	}()
	if rerr := liquidrender.Render(t.root, w, liquidBindings(data), liquidConfig()); rerr != nil {
		return liquidError(ErrRender, name, rerr)
	}
	return nil
}

// liquidLocated is the error interface of the engine's parse and render errors.
type liquidLocated interface {
	error
	Cause() error
	LineNumber() int
}

// liquidError turns an engine error into a *TemplateError. The engine already counts
// lines from the workflow file's (it was given firstLine).
func liquidError(kind ErrorKind, name string, err liquidLocated) *TemplateError {
	te := &TemplateError{Kind: kind, Name: name, Line: err.LineNumber()}
	if cause := err.Cause(); cause != nil {
		te.Err = liquidCause(cause)
	} else {
		te.Err = errors.New(liquidMessage(name, err.Error()))
	}
	return te
}

// liquidCause unwraps the engine's own wrapping down to the error that says what went
// wrong.
func liquidCause(err error) error {
	for {
		if e, ok := err.(interface{ Cause() error }); ok && e.Cause() != nil {
			err = e.Cause()
			continue
		}
		if errors.Is(err, errPromptTooLarge) {
			return errPromptTooLarge
		}
		return err
	}
}

// liquidPrefix matches the engine's message prefix, whose line is already in the
// TemplateError.
var liquidPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Liquid error( \(line \d+\))?: `) })

// liquidMessage is an engine message without its prefix and its " in <file>" suffix.
func liquidMessage(name, msg string) string {
	msg = liquidPrefix().ReplaceAllString(msg, "")
	return strings.TrimSuffix(msg, " in "+name)
}

// liquidBindings is the Liquid view of templateData's map. It follows Symphony: an
// `attempt` of 0 (a first run) is nil, and an issue field that is an empty string is
// nil, because Liquid holds "" true and Symphony's templates test optional fields with
// `{% if issue.description %}`. The issue also has Symphony's field names
// (withSymphonyAliases). Every map becomes a liquidObject, which fails on a key
// it does not have.
func liquidBindings(data map[string]any) map[string]any {
	data = withSymphonyAliases(data)
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = liquidValue(v, k == "issue")
	}
	if a, ok := out["attempt"].(int); ok && a == 0 {
		out["attempt"] = nil
	}
	return out
}

func liquidValue(v any, emptyIsNil bool) any {
	switch v := v.(type) {
	case map[string]any:
		obj := make(liquidObject, len(v))
		for k, x := range v {
			obj[k] = liquidValue(x, emptyIsNil)
		}
		return obj
	case []any:
		list := make([]any, len(v))
		for i, x := range v {
			list[i] = liquidValue(x, emptyIsNil)
		}
		return list
	case string:
		if v == "" && emptyIsNil {
			return nil
		}
	}
	return v
}

// liquidObject is a map of the prompt data as the Liquid engine sees it: a property it
// does not have is an error ("undefined variable"), never an empty string.
type liquidObject map[string]any

var _ values.Value = liquidObject(nil)

func (o liquidObject) raw() values.Value { return values.ValueOf(map[string]any(o)) }

// Interface returns o itself, not the plain map, so that a value passed through a filter
// or an {% assign %} stays strict.
func (o liquidObject) Interface() any { return o }

// Int panics as the engine's own values do for a non-number; the engine recovers it
// into an error.
func (o liquidObject) Int() int { panic(values.TypeError("an object is not a number")) }

func (o liquidObject) Equal(v values.Value) bool    { return o.raw().Equal(v) }
func (o liquidObject) Less(v values.Value) bool     { return o.raw().Less(v) }
func (o liquidObject) Contains(v values.Value) bool { return o.raw().Contains(v) }
func (o liquidObject) Test() bool                   { return true }

func (o liquidObject) IndexValue(k values.Value) values.Value { return o.PropertyValue(k) }

// PropertyValue is the value under key k. A key the object lacks panics with a
// values.TypeError, which the engine returns as the render's error.
func (o liquidObject) PropertyValue(k values.Value) values.Value {
	name, ok := k.Interface().(string)
	if !ok {
		panic(values.TypeError(fmt.Sprintf("undefined variable: an object has no entry %v (its keys are names)", k.Interface())))
	}
	if v, ok := o[name]; ok {
		return values.ValueOf(v)
	}
	if name == "size" {
		return values.ValueOf(len(o))
	}
	keys := make([]string, 0, len(o))
	for key := range o {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	panic(values.TypeError(fmt.Sprintf("undefined variable: no field %q (fields: %s)", name, strings.Join(keys, ", "))))
}
