package codex

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// capture makes the test write what the app-server wrote during it to testdata/name
// when it ends, with the machine's paths and ids made stable, when the tests run with
// -update.
func (r *rig) capture(t *testing.T, name string) {
	t.Helper()
	if !*update {
		return
	}
	t.Cleanup(func() { r.write(t, name) })
}

func (r *rig) write(t *testing.T, name string) {
	r.mu.Lock()
	data := bytes.Join(r.lines, []byte("\n"))
	r.mu.Unlock()
	data = append(scrub(data, r.ws, r.home), '\n')
	if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	msRE   = regexp.MustCompile(`("(?:startedAtMs|completedAtMs|emittedAtMs|createdAt|updatedAt|recencyAt|startedAt|completedAt)":)\d+`)
)

// scrub replaces the workspace and home paths, UUIDs and timestamps with fixed values,
// keeping distinct UUIDs distinct.
func scrub(data []byte, ws, home string) []byte {
	data = bytes.ReplaceAll(data, []byte(ws), []byte("/workspace"))
	data = bytes.ReplaceAll(data, []byte(home), []byte("/home/agent"))
	ids := map[string]string{}
	data = uuidRE.ReplaceAllFunc(data, func(b []byte) []byte {
		id, ok := ids[string(b)]
		if !ok {
			id = fmtUUID(len(ids) + 1)
			ids[string(b)] = id
		}
		return []byte(id)
	})
	return msRE.ReplaceAll(data, []byte("${1}1700000000000"))
}

func fmtUUID(n int) string {
	const z = "00000000-0000-7000-8000-000000000000"
	s := []byte(z)
	d := []byte(itoa(n))
	copy(s[len(s)-len(d):], d)
	return string(s)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
