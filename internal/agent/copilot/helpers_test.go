package copilot

import (
	"sortie/internal/agent/cli"

	"bufio"
	"os"
	"testing"
	"time"

	"sortie/internal/agent"
)

// clock is a fake time source that moves only when told to.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// readLines returns the non-empty lines of a transcript.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 10<<20)
	var lines []string
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			lines = append(lines, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// run feeds lines to a fresh translator and returns what it emitted.
func run(t testing.TB, lines ...string) ([]agent.Event, *translator) {
	t.Helper()
	var events []agent.Event
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tr := newTranslator(c.now, func(e agent.Event) { events = append(events, e) }, agent.Usage{})
	for _, l := range lines {
		tr.line([]byte(l))
	}
	return events, tr
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// adapter is the runner New builds, for tests that reach inside it.
type adapter = cli.Runner[state]

// dialectOf is a's dialect.
func dialectOf(a *adapter) *dialect { return a.Dialect.(*dialect) }
