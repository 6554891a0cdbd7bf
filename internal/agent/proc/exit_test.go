package proc

import (
	"errors"
	"syscall"
	"testing"

	"sortie/internal/agent"
)

func TestClassify_FollowsSpecDecisionOrder(t *testing.T) {
	readErr := errors.New("line too long")
	tests := []struct {
		name    string
		exit    Exit
		readErr error
		want    agent.ErrorKind
	}{
		{"clean exit", Exit{Code: 0}, nil, ""},
		{"cancelled wins over everything", Exit{Code: 127, Cancelled: true}, readErr, agent.ErrTurnCancelled},
		{"cancelled child that exited 0", Exit{Code: 0, Cancelled: true}, nil, agent.ErrTurnCancelled},
		{"read error wins over status", Exit{Code: 127}, readErr, agent.ErrPortExit},
		{"read error with clean exit", Exit{Code: 0}, readErr, agent.ErrPortExit},
		{"127 is not found", Exit{Code: 127}, nil, agent.ErrNotFound},
		{"signal", Exit{Code: -1, Signal: syscall.SIGKILL}, nil, agent.ErrTurnCancelled},
		{"other status", Exit{Code: 2}, nil, agent.ErrPortExit},
		{"unknown status", Exit{Code: -1}, nil, agent.ErrPortExit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.exit, tt.readErr); got != tt.want {
				t.Errorf("Classify(%+v, %v): want %q, got %q", tt.exit, tt.readErr, tt.want, got)
			}
		})
	}
}

func TestExit_String(t *testing.T) {
	tests := []struct {
		exit Exit
		want string
	}{
		{Exit{Code: 3}, "exit status 3"},
		{Exit{Code: -1, Signal: syscall.SIGTERM}, "killed by signal terminated"},
		{Exit{Code: -1}, "unknown exit"},
	}
	for _, tt := range tests {
		if got := tt.exit.String(); got != tt.want {
			t.Errorf("%+v.String(): want %q, got %q", tt.exit, tt.want, got)
		}
	}
}
