package claude

import (
	"testing"

	"sortie/internal/testkit/clis"
)

func TestMain(m *testing.M) { clis.Main(m, nil) }
