package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/internal/option"
)

type nopAdapter struct{ cfg Config }

func (nopAdapter) StartSession(context.Context, StartParams) (*Session, error) {
	return &Session{}, nil
}
func (nopAdapter) RunTurn(context.Context, *Session, TurnParams) (TurnResult, error) {
	return TurnResult{}, nil
}
func (nopAdapter) StopSession(context.Context, *Session) error { return nil }

func TestRegistry_UnknownKindListsKnownKinds(t *testing.T) {
	Register("test-needs-command", Meta{RequiresCommand: true}, func(c Config) (Adapter, error) { return nopAdapter{c}, nil })
	Register("test-default-command", Meta{DefaultCommand: "tool"}, func(c Config) (Adapter, error) { return nopAdapter{c}, nil })

	_, err := New(Config{Kind: "nope"})
	if err == nil || !strings.Contains(err.Error(), `unknown agent kind "nope"`) || !strings.Contains(err.Error(), "test-needs-command") {
		t.Fatalf("New(unknown) error = %v, want one naming the kind and listing the known kinds", err)
	}
	if _, err := New(Config{Kind: "test-needs-command"}); err == nil || !strings.Contains(err.Error(), "agent.command") {
		t.Fatalf("New without a required command: error = %v, want one naming agent.command", err)
	}
	// A CLI adapter (RequiresCommand) with a default command runs that default.
	Register("test-required-with-default", Meta{RequiresCommand: true, DefaultCommand: "cli"}, func(c Config) (Adapter, error) { return nopAdapter{c}, nil })
	if a, err := New(Config{Kind: "test-required-with-default"}); err != nil || a.(nopAdapter).cfg.Command != "cli" {
		t.Fatalf("New without agent.command for an adapter with a default = %v, %v; want the default command", a, err)
	}
	a, err := New(Config{Kind: "test-default-command"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.(nopAdapter).cfg.Command; got != "tool" {
		t.Fatalf("default command = %q, want %q", got, "tool")
	}
}

func TestRegistry_DuplicateKindPanics(t *testing.T) {
	Register("test-dup", Meta{}, func(c Config) (Adapter, error) { return nopAdapter{c}, nil })
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of one kind did not panic")
		}
	}()
	Register("test-dup", Meta{}, func(c Config) (Adapter, error) { return nopAdapter{c}, nil })
}

func TestErrorKind_Retryable(t *testing.T) {
	cases := map[ErrorKind]bool{
		ErrNotFound: false, ErrInvalidWorkspace: false, ErrTurnCancelled: false, ErrTurnInputRequired: false,
		ErrResponseTimeout: true, ErrTurnTimeout: true, ErrPortExit: true, ErrResponse: true, ErrTurnFailed: true,
	}
	for k, want := range cases {
		if got := k.Retryable(); got != want {
			t.Errorf("%s.Retryable() = %v, want %v", k, got, want)
		}
	}
}

func TestKindOf_FindsWrappedError(t *testing.T) {
	err := fmt.Errorf("turn 2: %w", Errorf(ErrPortExit, "exit status %d", 3))
	if got := KindOf(err); got != ErrPortExit {
		t.Fatalf("KindOf = %q, want %q", got, ErrPortExit)
	}
	if got := KindOf(errors.New("plain")); got != "" {
		t.Fatalf("KindOf(plain) = %q, want empty", got)
	}
	if got := err.Error(); got != "turn 2: port_exit: exit status 3" {
		t.Fatalf("message = %q", got)
	}
}

func TestConfig_ProgramAndReadTimeoutDefaults(t *testing.T) {
	if got := (Config{}).Program("claude"); len(got) != 1 || got[0] != "claude" {
		t.Errorf("Program with no command = %q, want [claude]", got)
	}
	if got := (Config{Command: "  npx  claude --x "}).Program("claude"); len(got) != 3 || got[0] != "npx" || got[2] != "--x" {
		t.Errorf("Program = %q, want [npx claude --x]", got)
	}
	if got := (Config{}).ReadTimeoutOrDefault(); got != DefaultReadTimeout {
		t.Errorf("ReadTimeoutOrDefault unset = %v, want %v", got, DefaultReadTimeout)
	}
	if got := (Config{ReadTimeout: 42 * time.Second}).ReadTimeoutOrDefault(); got != 42*time.Second {
		t.Errorf("ReadTimeoutOrDefault = %v, want 42s", got)
	}
}

func TestRegistry_LookupGivesTheDeclaredOptions(t *testing.T) {
	Register("test-options", Meta{Options: option.Set{Strict: true, Keys: []option.Option{{Key: "model"}, {Key: "effort"}}}},
		func(c Config) (Adapter, error) { return nopAdapter{c}, nil })
	m, ok := Lookup("test-options")
	if !ok || !m.Options.Strict || strings.Join(m.Options.Known(), ",") != "effort,model" {
		t.Errorf("Lookup = %+v, %v; want the registered option set", m.Options, ok)
	}
}
