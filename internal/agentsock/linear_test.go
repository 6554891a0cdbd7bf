package agentsock

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type linearHandler struct {
	fakeHandler
	got  LinearGraphQLRequest
	sess Session
}

func (h *linearHandler) LinearGraphQL(_ context.Context, s Session, r LinearGraphQLRequest) (json.RawMessage, *Error) {
	h.got, h.sess = r, s
	return json.RawMessage(`{"data":{"viewer":{"id":"u"}}}`), nil
}

func TestLinearGraphQL_UnsupportedWithoutAHandler(t *testing.T) {
	s, _ := listen(t)
	c := Dial(s.Path(), s.Grant(Session{IssueID: "1"}))
	_, err := c.LinearGraphQL(context.Background(), LinearGraphQLRequest{Query: "{ viewer { id } }"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != "unsupported_operation" {
		t.Fatalf("got %v, want unsupported_operation", err)
	}
}

func TestLinearGraphQL_ForwardsWithTheTokensSession(t *testing.T) {
	h := &linearHandler{}
	s := listenWith(t, h)
	c := Dial(s.Path(), s.Grant(Session{IssueID: "uuid-1", Identifier: "ENG-1"}))
	data, err := c.LinearGraphQL(context.Background(), LinearGraphQLRequest{Query: "{ viewer { id } }", Variables: json.RawMessage(`{"a":1}`)})
	if err != nil || string(data) != `{"data":{"viewer":{"id":"u"}}}` {
		t.Fatalf("got %s, %v", data, err)
	}
	if h.sess.IssueID != "uuid-1" || h.got.Query != "{ viewer { id } }" || string(h.got.Variables) != `{"a":1}` {
		t.Fatalf("handler got %+v for %+v", h.got, h.sess)
	}
	_, err = Dial(s.Path(), "forged").LinearGraphQL(context.Background(), LinearGraphQLRequest{Query: "{ viewer { id } }"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Fatalf("a forged token: %v", err)
	}
}

func TestLinearGraphQL_ACallAtTheDocumentedBoundsGetsThrough(t *testing.T) {
	h := &linearHandler{}
	s := listenWith(t, h)
	c := Dial(s.Path(), s.Grant(Session{IssueID: "uuid-1", Identifier: "ENG-1"}))
	// linear_graphql's bounds (docs/agent-tools.md): a 16 KiB query, here of control
	// characters JSON escapes to six bytes each, and 32 KiB of variables, of characters
	// encoding/json would escape by default.
	const maxQuery, maxVariables = 16 << 10, 32 << 10
	head := "{ viewer { id } } #"
	query := head + strings.Repeat("\x01", maxQuery-len(head))
	variables := `{"s":"` + strings.Repeat("<&>", (maxVariables-8)/3) + `"}`
	if _, err := c.LinearGraphQL(context.Background(), LinearGraphQLRequest{Query: query, Variables: json.RawMessage(variables)}); err != nil {
		t.Fatalf("a call at the documented bounds: %v", err)
	}
	if h.got.Query != query || string(h.got.Variables) != variables {
		t.Fatalf("the handler got a %d-byte query and %d bytes of variables, want %d and %d", len(h.got.Query), len(h.got.Variables), len(query), len(variables))
	}
	_, err := c.LinearGraphQL(context.Background(), LinearGraphQLRequest{Query: strings.Repeat("<", MaxLinearGraphQLBody)})
	var e *Error
	if !errors.As(err, &e) || e.Kind != "invalid_input" {
		t.Fatalf("a body over MaxLinearGraphQLBody: got %v, want invalid_input", err)
	}
}
