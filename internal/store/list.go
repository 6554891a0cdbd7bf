package store

import (
	"errors"
	"fmt"
)

// RunFilter selects runs for Reader.ListRuns: the run-history page of the API and the
// dashboard. The zero value of each selector means "any"; Limit is required.
type RunFilter struct {
	// Before keeps runs whose id is below it (the next page starts before the last id
	// of the previous one); 0 for no bound.
	Before int64
	// Limit is the most runs returned, 1 or more.
	Limit int
	// Status keeps runs in this status; "" for any.
	Status RunStatus
	// Identifier keeps runs of this issue identifier (e.g. PROJ-12); "" for any.
	Identifier string
}

// Validate checks that f can be queried.
func (f RunFilter) Validate() error {
	var errs []error
	if f.Limit < 1 {
		errs = append(errs, fmt.Errorf("limit must be 1 or more (got %d)", f.Limit))
	}
	if f.Before < 0 {
		errs = append(errs, fmt.Errorf("before must be a run id or 0 (got %d)", f.Before))
	}
	if f.Status != "" && !f.Status.Valid() {
		errs = append(errs, fmt.Errorf("status %q is not a run status (want one of %v)", f.Status, RunStatuses))
	}
	return errors.Join(errs...)
}

// CheckLimit rejects a list limit below 1; op names the list for the message, e.g.
// "list recent runs".
func CheckLimit(op string, limit int) error {
	if limit < 1 {
		return fmt.Errorf("store: %s: limit must be 1 or more (got %d)", op, limit)
	}
	return nil
}
