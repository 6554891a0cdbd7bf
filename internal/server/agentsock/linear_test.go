package agentsock

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	dir, err := os.MkdirTemp("", "as")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &linearHandler{}
	s, err := Listen(filepath.Join(dir, "agent.sock"), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
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
