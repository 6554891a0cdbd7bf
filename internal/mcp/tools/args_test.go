package tools

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agentsock"
)

func TestDecodeArgs_StrictAgainstTheSchema(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    agentsock.TrackerRequest
		wantErr string // substring; "" means success
	}{
		{name: "absent means {}", args: ""},
		{name: "null means {}", args: "null"},
		{name: "empty object", args: "{}"},
		{name: "all fields", args: `{"operation":"transition_issue","issue_id":"7","target_state":"Done"}`,
			want: agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "7", TargetState: "Done"}},
		{name: "null field is absent", args: `{"operation":"search_issues","issue_id":null}`,
			want: agentsock.TrackerRequest{Operation: "search_issues"}},
		{name: "unknown field", args: `{"operation":"fetch_issue","issue":"7"}`,
			wantErr: `unknown field "issue": tracker_api accepts only issue_id, operation, target_state`},
		{name: "field names are case-sensitive", args: `{"Operation":"fetch_issue"}`, wantErr: `unknown field "Operation"`},
		{name: "wrong type", args: `{"operation":5}`, wantErr: `field "operation" must be a string (got number)`},
		{name: "array for a string", args: `{"issue_id":["7"]}`, wantErr: `field "issue_id" must be a string (got array)`},
		{name: "not an object", args: `["fetch_issue"]`, wantErr: "arguments must be a JSON object (got an array)"},
		{name: "a string", args: `"fetch_issue"`, wantErr: "arguments must be a JSON object (got a string)"},
		{name: "too large", args: `{"issue_id":"` + strings.Repeat("x", MaxArgsSize) + `"}`, wantErr: "larger than 64 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got agentsock.TrackerRequest
			err := decodeArgs(TrackerSpec, json.RawMessage(tt.args), &got)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("decodeArgs(%s) = %+v, %v; want %+v, nil", tt.args, got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("decodeArgs(%s) error = %v; want one containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

func TestDecodeArgs_NoArgumentToolNamesItself(t *testing.T) {
	err := decodeArgs(StatusSpec, json.RawMessage(`{"verbose":true}`), &struct{}{})
	want := `unknown field "verbose": sortie_status takes no arguments (send {})`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v; want %q", err, want)
	}
}

// The advertised schema must describe exactly the fields a tool decodes: decodeArgs
// checks names against the schema, the struct decodes them.
func TestSpecs_SchemaPropertiesAreTheDecodedFields(t *testing.T) {
	decoded := map[string]any{
		NameStatus: struct{}{}, NameHistory: struct{}{}, NameBudget: struct{}{},
		NameTracker: agentsock.TrackerRequest{}, NameNotify: agentsock.NotifyRequest{},
		NameLinearGraphQL: agentsock.LinearGraphQLRequest{},
	}
	for _, s := range Specs() {
		v, ok := decoded[s.Name]
		if !ok {
			t.Fatalf("no decoded type listed for %s", s.Name)
		}
		var fields []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
		}
		slices.Sort(fields)
		if got := s.Params(); !slices.Equal(got, fields) {
			t.Errorf("%s: schema properties %v, decoded fields %v", s.Name, got, fields)
		}
		var schema map[string]any
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil {
			t.Fatalf("%s: schema: %v", s.Name, err)
		}
		if schema["type"] != "object" || schema["additionalProperties"] != false {
			t.Errorf("%s: schema %s: want type object and additionalProperties false", s.Name, s.InputSchema)
		}
	}
}
