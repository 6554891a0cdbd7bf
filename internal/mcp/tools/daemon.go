package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sortie/internal/agentsock"
)

// DefaultCallTimeout bounds one Tier 2 call, daemon and tracker or notification backend
// included, unless SORTIE_TOOL_TIMEOUT_MS says otherwise.
const DefaultCallTimeout = 30 * time.Second

// Daemon is the daemon's side of the Tier 2 tools: *agentsock.Client. A failure the
// daemon reports comes back as *agentsock.Error; any other error means the daemon could
// not be asked.
type Daemon interface {
	Tracker(ctx context.Context, req agentsock.TrackerRequest) (json.RawMessage, error)
	Notify(ctx context.Context, req agentsock.NotifyRequest) (json.RawMessage, error)
}

// daemonCall runs call with timeout and turns its outcome into the Tier 2 envelope.
// transportKind is what a failure to reach the daemon is reported as.
func daemonCall(ctx context.Context, timeout time.Duration, transportKind string, call func(context.Context) (json.RawMessage, error)) Result {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	data, err := call(ctx)
	if err == nil {
		return envelopeOK(data)
	}
	var e *agentsock.Error
	switch {
	case errors.As(err, &e) && e.Kind == KindUnauthorized:
		return envelopeFail(KindUnauthorized, "the sortie daemon refused this session's token: %s. "+
			"The session has probably ended; the tool cannot be used any more.", e.Message)
	case errors.As(err, &e):
		return envelopeFail(e.Kind, "%s", e.Message)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return envelopeFail(transportKind, "no answer from the sortie daemon within %v (SORTIE_TOOL_TIMEOUT_MS); try again later", timeout)
	case ctx.Err() != nil:
		return envelopeFail(transportKind, "the call was cancelled: %v", ctx.Err())
	default:
		return envelopeFail(transportKind, "%v", err)
	}
}

// fieldError is an invalid_input message about one field.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}
