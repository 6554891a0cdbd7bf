package opencode

import (
	"testing"

	"sortie/internal/testkit/clis"
)

// sharedCache is the XDG_CACHE_HOME of every opencode run of this test binary.
var sharedCache string

func TestMain(m *testing.M) { clis.Main(m, &sharedCache) }
