package store

import (
	"errors"
	"fmt"
	"time"
)

// checks collects what is wrong with a value before it is written, in the order the
// fields are checked; err joins them.
type checks []error

func (c *checks) empty(name, v string) {
	if v == "" {
		*c = append(*c, errors.New(name+" is empty"))
	}
}

func (c *checks) zero(name string, t time.Time) {
	if t.IsZero() {
		*c = append(*c, errors.New(name+" is zero"))
	}
}

func (c *checks) attempt(n int) {
	if n < 1 {
		*c = append(*c, fmt.Errorf("attempt must be 1 or more (got %d)", n))
	}
}

func (c *checks) add(err error) { *c = append(*c, err) }

func (c checks) err() error { return errors.Join(c...) }
