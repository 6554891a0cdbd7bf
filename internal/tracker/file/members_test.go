package file

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// membersV1 is objectMembers as encoding/json's tokenizer finds them, the reference
// the jsontext version must agree with.
func membersV1(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var ms []member
	prev := int(dec.InputOffset())
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		keyEnd := int(dec.InputOffset())
		keyStart := prev + bytes.IndexByte(obj[prev:], '"')
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		valEnd := int(dec.InputOffset())
		ms = append(ms, member{key: key, keyStart: keyStart, keyEnd: keyEnd, valStart: valEnd - len(raw), valEnd: valEnd})
		prev = valEnd
	}
	return ms, nil
}

// The members and elements of the objects an issues file holds are found where
// encoding/json finds them: escaped and repeated keys, invalid UTF-8, nesting, odd
// spacing and line endings.
func TestObjectMembers_AgreeWithEncodingJSON(t *testing.T) {
	for _, obj := range []string{
		`{}`,
		`{ }`,
		`{"id":"a","state":"s"}`,
		"{\r\n  \"id\" : \"a\" ,\r\n  \"st\\u0061te\":\t\"s\"\r\n}",
		`{"state":"x","State":"y","state":"z"}`,
		"{\"t\xffitle\":\"bad \xfe utf-8\",\"state\":\"s\"}",
		`{"comments":[{"id":"c1","body":"}{]["},{"id":"c2"}],"n":-1.5e3,"b":true,"z":null}`,
		`{"nested":{"state":"inner"},"state":"outer","arr":[[1,[2]],{"k":[]}]}`,
		`{"\"quoted\\\\key\"":"v","emoji":"\ud83d\ude00"}`,
		`{"lone\ud800":"x","state":"\udc00 lone"}`,
	} {
		want, werr := membersV1([]byte(obj))
		got, err := objectMembers([]byte(obj))
		if (err != nil) != (werr != nil) || !slices.Equal(got, want) {
			t.Errorf("objectMembers(%q) =\n  %+v, %v\nencoding/json finds\n  %+v, %v", obj, got, err, want, werr)
		}
	}
	for _, arr := range []string{`[]`, `[ ]`, `[1]`, "[ {\"a\":[1,2]} ,\r\n\"s\", null,[[]] ]"} {
		got, err := arrayElements([]byte(arr))
		if err != nil {
			t.Fatalf("arrayElements(%q): %v", arr, err)
		}
		var want []span
		var raws []json.RawMessage
		if err := json.Unmarshal([]byte(arr), &raws); err != nil {
			t.Fatal(err)
		}
		from := 0
		for _, r := range raws {
			start := from + bytes.Index([]byte(arr)[from:], r)
			want = append(want, span{start, start + len(r)})
			from = start + len(r)
		}
		if !slices.Equal(got, want) {
			t.Errorf("arrayElements(%q) = %v, want %v", arr, got, want)
		}
	}
}
