package copilot

import (
	"testing"

	"sortie/internal/testkit/clis"
)

// cliCache is the XDG_CACHE_HOME of every CLI run in this package. The npm package
// unpacks its native runtime (about 235 MB) into the cache on its first run, which
// takes seconds; sharing one cache keeps that to once per `go test`, while HOME and
// the CLI's configuration and session state stay private to each test.
var cliCache string

func TestMain(m *testing.M) { clis.Main(m, &cliCache) }
