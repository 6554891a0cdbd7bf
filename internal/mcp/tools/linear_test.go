package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sortie/internal/agentsock"
)

type linearDaemon struct {
	got  []agentsock.LinearGraphQLRequest
	data json.RawMessage
	err  error
}

func (d *linearDaemon) LinearGraphQL(_ context.Context, req agentsock.LinearGraphQLRequest) (json.RawMessage, error) {
	d.got = append(d.got, req)
	return d.data, d.err
}

func TestLinearGraphQL_ForwardsAndWraps(t *testing.T) {
	d := &linearDaemon{data: json.RawMessage(`{"data":{"viewer":{"id":"u"}}}`)}
	out, isErr := callTool(t, NewLinearGraphQL(d, 0), `{"query":"{ viewer { id } }","variables":{"a":1}}`)
	if isErr || !strings.Contains(out, `"success":true`) || !strings.Contains(out, `"viewer"`) {
		t.Fatalf("got %s", out)
	}
	if len(d.got) != 1 || d.got[0].Query != "{ viewer { id } }" || string(d.got[0].Variables) != `{"a":1}` {
		t.Fatalf("forwarded %+v", d.got)
	}
	d.err = agentsock.Errorf("forbidden_operation", "mutation issueDelete is not allowed")
	if out, isErr := callTool(t, NewLinearGraphQL(d, 0), `{"query":"mutation { issueDelete(id: \"x\") { success } }"}`); !isErr || !strings.Contains(out, "forbidden_operation") {
		t.Fatalf("daemon refusal: %s", out)
	}
}

func TestLinearGraphQL_RejectsBadArgumentsLocally(t *testing.T) {
	d := &linearDaemon{}
	for _, args := range []string{`{}`, `{"query":""}`, `{"query":"{a}","variables":[1]}`, `{"query":"{a}","extra":1}`,
		`{"query":"` + strings.Repeat("a", maxLinearQuery+1) + `"}`} {
		if out, isErr := callTool(t, NewLinearGraphQL(d, 0), args); !isErr || !strings.Contains(out, KindInvalidInput) {
			t.Errorf("%.60s: got %s", args, out)
		}
	}
	if len(d.got) != 0 {
		t.Fatalf("bad arguments reached the daemon: %d", len(d.got))
	}
}
