package store

import (
	"strings"
	"testing"
)

func TestRunStatus_TerminalExcludesRunningAndUnknown(t *testing.T) {
	tests := []struct {
		status          RunStatus
		valid, terminal bool
	}{
		{StatusRunning, true, false},
		{StatusSucceeded, true, true},
		{StatusHandedOff, true, true},
		{StatusBlocked, true, true},
		{StatusBudgetExhausted, true, true},
		{StatusFailed, true, true},
		{StatusTimedOut, true, true},
		{StatusStalled, true, true},
		{StatusCancelled, true, true},
		{StatusInterrupted, true, true},
		{"", false, false},
		{"ci_failed", false, false},
		{"Succeeded", false, false},
	}
	for _, tt := range tests {
		if got := tt.status.Valid(); got != tt.valid {
			t.Errorf("%q.Valid() = %v, want %v", tt.status, got, tt.valid)
		}
		if got := tt.status.Terminal(); got != tt.terminal {
			t.Errorf("%q.Terminal() = %v, want %v", tt.status, got, tt.terminal)
		}
	}
}

func TestErrors_NameTheFileAndTheFix(t *testing.T) {
	tests := []struct {
		err  error
		want []string
	}{
		{&LockedError{Path: "/w/.sortie.db", PID: 42}, []string{"store: /w/.sortie.db is in use by another sortie daemon (pid 42)", "db_path"}},
		{&LockedError{Path: "/w/.sortie.db"}, []string{"(pid unknown)"}},
		{&SchemaError{Path: "/w/.sortie.db", Version: 7, Known: 3}, []string{"/w/.sortie.db", "version 7", "up to 3", "newer sortie"}},
		{&SchemaError{Path: "/w/.sortie.db", Version: 0, Known: 3}, []string{"version 0", "needs version 3", "start the sortie daemon"}},
	}
	for _, tt := range tests {
		msg := tt.err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q does not contain %q", msg, w)
			}
		}
	}
}

func TestRunEnd_ValidateNamesTheStatuses(t *testing.T) {
	err := RunEnd{Status: StatusRunning}.Validate()
	if err == nil || !strings.Contains(err.Error(), "succeeded") {
		t.Fatalf("RunEnd{running}.Validate() = %v, want an error listing the terminal statuses", err)
	}
	if err := (Run{}).Validate(); err == nil || len(strings.Split(err.Error(), "\n")) != 5 {
		t.Fatalf("Run{}.Validate() = %v, want all five problems", err)
	}
}
