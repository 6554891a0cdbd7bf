package agentenv

import (
	"slices"
	"testing"
)

func TestFilter_AllowListWithoutSideChannels(t *testing.T) {
	environ := []string{"PATH=/bin", "LC_ALL=C", "ANTHROPIC_API_KEY=k", "MY_X=1", "OTHER=no", "TMUX=/tmp/tmux-0/default,1,0",
		"PGPASSWORD=p", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus", "SORTIE_DB_PATH=/db", "SECRET=s", "=bad", "bad"}
	got := Filter(environ, []string{"ANTHROPIC_*", "PG*"}, []string{"MY_*", "TMUX", "SECRET", "SORTIE_DB_PATH"}, []string{"SECRET"})
	if want := []string{"PATH=/bin", "LC_ALL=C", "ANTHROPIC_API_KEY=k", "MY_X=1"}; !slices.Equal(got, want) {
		t.Errorf("Filter = %q, want %q", got, want)
	}
}

func TestCheckOperatorName(t *testing.T) {
	for name, ok := range map[string]bool{"AWS_PROFILE": true, "MY_*": true, "_X": true, "*": false, "1X": false, "A-B": false,
		"SORTIE_X": false, "SORTIE*": false, "SORT*": false, "TMUX": false, "PGHOST": false, "PG*": false, "P*": false,
		"DBUS_SESSION_BUS_ADDRESS": false, "XDG_RUNTIME_DIR": false, "SSH_AUTH_SOCK": false, "XDG_CONFIG_HOME": true} {
		if got := CheckOperatorName(name) == ""; got != ok {
			t.Errorf("CheckOperatorName(%q) = %q, want ok=%v", name, CheckOperatorName(name), ok)
		}
	}
}
